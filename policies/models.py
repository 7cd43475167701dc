"""The policies a run obeys (docs/policy.md): the repository's `.rysh/policy.yaml` as each sync
read it, and the organisation's policy an admin keeps here."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from policies.rules import policy_issues

ORG_LABEL = "org policy (admin)"


class PolicyVersion(models.Model):
    """`.rysh/policy.yaml` at a commit the catalogue synced; the newest one governs new runs."""

    repo = models.CharField(max_length=500)  # redacted, as the catalogue's RepoState keys it
    branch = models.CharField(max_length=200)
    commit_sha = models.CharField(max_length=64)
    present = models.BooleanField(default=False)  # False: the commit has no policy file
    text = models.TextField(blank=True)
    valid = models.BooleanField(default=True)
    errors = models.JSONField(default=list, blank=True)
    synced_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["repo", "branch", "-id"], name="policy_version_latest")]

    def __str__(self) -> str:
        state = "valid" if self.valid else "INVALID"
        return f"policy at {self.commit_sha[:8]} ({state if self.present else 'no file'})"


class OrgPolicy(models.Model):
    """The organisation's policy as an admin writes it (one row; validated on save)."""

    text = models.TextField(help_text="YAML, the keys of .rysh/policy.yaml (docs/policy.md)")
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        verbose_name = "organisation policy"
        verbose_name_plural = "organisation policy"

    def __str__(self) -> str:
        return "organisation policy"

    def save(self, *args, **kwargs) -> None:
        self.full_clean()  # an org policy that does not parse is never stored
        super().save(*args, **kwargs)

    def clean(self) -> None:
        issues = policy_issues(self.text, label=ORG_LABEL)
        if issues:
            raise ValidationError({"text": [str(issue) for issue in issues]})
