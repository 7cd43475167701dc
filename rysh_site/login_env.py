"""The login settings (company login by OpenID Connect, local passwords), read strictly: a bad
value stops start-up naming the variable and what it expects (docs/login.md)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from rysh_site.roles import ROLES

LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def issuer_url(name: str) -> str:
    """An https URL (http only on loopback: a provider the tests or a developer start), without a
    query or fragment; empty means company login is off."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        raise ImproperlyConfigured(
            f"{name}: expected the provider's issuer URL, such as https://login.example.com/realms/team, got {raw!r}"
        )
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise ImproperlyConfigured(f"{name}: expected an https URL (http only on loopback), got {raw!r}")
    return raw.rstrip("/")


def role_map(name: str) -> dict[str, str]:
    """`provider-group=role,…` (`rysh-admins=admin,rysh-ops=operator`): which of the provider's
    groups gives which role. A group named twice, an entry without `=`, or a role that is not one
    of ours stops start-up."""
    found: dict[str, str] = {}
    for entry in (part.strip() for part in os.environ.get(name, "").split(",")):
        if not entry:
            continue
        group, sep, role = (piece.strip() for piece in entry.rpartition("="))
        if not sep or not group or role not in ROLES:
            raise ImproperlyConfigured(
                f"{name}: expected provider-group=role pairs, the role one of {', '.join(ROLES)} "
                f"(e.g. rysh-admins=admin,rysh-ops=operator), got {entry!r}"
            )
        if group in found:
            raise ImproperlyConfigured(f"{name}: the group {group!r} is named twice")
        found[group] = role
    return found


def usernames(name: str) -> list[str]:
    return [u.strip() for u in os.environ.get(name, "").split(",") if u.strip()]


def require_all(named: dict[str, str], because: str) -> None:
    missing = [name for name, value in named.items() if not value]
    if missing:
        raise ImproperlyConfigured(f"{because}: set {' and '.join(missing)}")
