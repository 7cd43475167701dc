"""API tokens (HackSoft services): create one (the secret is returned once and never stored),
revoke it, find the token a secret belongs to, and count a call against the rate limit."""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from api.models import SCOPES, ApiRateWindow, ApiToken
from audit.services import audit_record
from rysh_site.roles import require

SECRET_PREFIX = "rysh_"
PREFIX_LENGTH = 12  # "rysh_" and 7 characters of the random part: enough to tell tokens apart
EXPIRY_DAYS = (7, 30, 90, 365)


class TokenRefused(Exception):
    """A token cannot be made or revoked, or a secret does not open the API; the message says why."""


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # shown once, to the person who made it


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_create(*, owner, name: str, scopes: list[str], days: int, by) -> NewToken:
    """A token for `owner`, made by `by` (the owner, or an admin making one for another user,
    e.g. a service user for CI). The token can never do more than its owner's roles allow."""
    if by.pk != owner.pk:
        require(by, "admin")
    name = name.strip()
    if not name:
        raise TokenRefused("a token needs a name")
    if not scopes or set(scopes) - set(SCOPES):
        raise TokenRefused(f"scopes: expected one or more of {', '.join(SCOPES)}, got {', '.join(scopes) or 'none'}")
    if days not in EXPIRY_DAYS:
        raise TokenRefused(f"expiry: expected one of {', '.join(map(str, EXPIRY_DAYS))} days, got {days}")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                owner=owner,
                name=name,
                scopes=[s for s in SCOPES if s in scopes],
                prefix=secret[:PREFIX_LENGTH],
                digest=digest_of(secret),
                created_by=by,
                expires_at=timezone.now() + timedelta(days=days),
            )
    except IntegrityError:
        raise TokenRefused(f"{owner.get_username()} already has a token named {name!r}") from None
    audit_record(actor=by, action="token.create", target=token, detail=_detail(token))
    return NewToken(token=token, secret=secret)


def token_revoke(*, token: ApiToken, by) -> None:
    """Revoked at once: its next call gets 401. Its owner or an admin may revoke it."""
    if by.pk != token.owner_id:
        require(by, "admin")
    if ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()) != 1:
        raise TokenRefused(f"token {token.name!r} was already revoked")
    audit_record(actor=by, action="token.revoke", target=token, detail=_detail(token))


def _detail(token: ApiToken) -> dict:
    return {"owner": token.owner.get_username(), "scopes": list(token.scopes)}


def token_for_secret(secret: str, *, now: datetime | None = None) -> ApiToken:
    """The active token the secret opens, its last use noted; else TokenRefused (401)."""
    now = now or timezone.now()
    token = ApiToken.objects.select_related("owner").filter(digest=digest_of(secret)).first()
    if token is None:
        raise TokenRefused("unknown API token")
    if token.revoked_at is not None:
        raise TokenRefused(f"API token {token.name!r} was revoked")
    if token.expires_at <= now:
        raise TokenRefused(f"API token {token.name!r} expired on {token.expires_at:%Y-%m-%d %H:%M} UTC")
    if not token.owner.is_active:
        raise TokenRefused(f"the owner of API token {token.name!r} is deactivated")
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def rate_take(*, token: ApiToken, now: datetime | None = None) -> int | None:
    """Count one call in the token's current minute: None when it is within
    RYSH_API_RATE_PER_MINUTE, else the seconds until the next minute starts (Retry-After)."""
    now = now or timezone.now()
    start = now.replace(second=0, microsecond=0)
    windows = ApiRateWindow.objects.filter(token=token, start=start)
    with transaction.atomic():  # the increment and the read see the same count (the row is locked)
        if not windows.update(count=F("count") + 1):
            try:
                with transaction.atomic():
                    ApiRateWindow.objects.create(token=token, start=start, count=1)
            except IntegrityError:  # another process opened this minute's window first
                windows.update(count=F("count") + 1)
            ApiRateWindow.objects.filter(token=token, start__lt=start).delete()
        count = windows.values_list("count", flat=True).get()
    if count <= settings.RYSH_API_RATE_PER_MINUTE:
        return None
    return max(1, math.ceil(60 - (now - start).total_seconds()))
