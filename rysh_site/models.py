"""Fields several apps' models share, as abstract bases (no table of their own, no column changed:
each keeps the field definitions its migrations already hold)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Dated(models.Model):
    """When a row was made and last saved."""

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Stamped(Dated):
    """Who made a row (kept when that user goes: SET_NULL), and when it was made and last saved."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True
