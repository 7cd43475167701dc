"""ApiToken: a person's (or a service user's) key to the REST API, and ApiRateWindow: how many
calls a token made in the current minute (the rate limit, counted in the database so every web
process sees the same count without a shared cache).

The secret itself is never stored: only its SHA-256 (`digest`) and its first characters
(`prefix`, shown so people can tell their tokens apart). A fast hash is enough here, unlike for
passwords: the secret is 32 random bytes from `secrets`, so there is nothing to guess from a
leaked digest, and a fast, indexed lookup keeps each call cheap (a slow hash would cost every
API call what it costs a login).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

READ, OPERATE, ADMIN = "read", "operate", "admin"
SCOPES = (READ, OPERATE, ADMIN)
# scopes nest: an operate token reads too, an admin token operates too
GRANTS = {READ: {READ}, OPERATE: {READ, OPERATE}, ADMIN: {READ, OPERATE, ADMIN}}


class ApiToken(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=60)
    scopes = models.JSONField(default=list)  # a subset of SCOPES
    prefix = models.CharField(max_length=16)  # the secret's first characters, for people to recognise it
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the whole secret
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # an admin who made it for someone else (a service user); else the owner
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="api_token_owner_name_unique")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def grants(self, scope: str) -> bool:
        return any(scope in GRANTS.get(s, set()) for s in self.scopes)

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def active(self) -> bool:
        return self.revoked_at is None and not self.expired

    @property
    def status(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expired else "active"


class ApiRateWindow(models.Model):
    """Calls a token made in one minute; older windows are deleted when a new one opens."""

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="+")
    start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["token", "start"], name="api_rate_token_start_unique")]
