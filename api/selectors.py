"""Reading API tokens: a person's own, and (for admins) everyone's."""

from __future__ import annotations

from django.db.models import QuerySet

from api.models import ApiToken


def tokens_of(owner) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(owner=owner).select_related("created_by").order_by("-created_at", "-id")


def tokens_all() -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("owner", "created_by").order_by("owner__username", "-created_at", "-id")
