"""OIDCIdentity: which person at which provider a user is. A login finds its user by the ID
token's issuer and subject (`sub`, stable at the provider), never by a name or an email someone
could take: a provider's user called like a local account does not become it."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OIDCIdentity(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identity")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    linked_at = models.DateTimeField(auto_now_add=True)
    # what the provider said at the last login (the groups claim as sent; null: the claim was missing)
    last_groups = models.JSONField(null=True, blank=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique")]
        verbose_name = "OIDC identity"
        verbose_name_plural = "OIDC identities"

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"
