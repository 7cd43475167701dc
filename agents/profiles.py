"""Browser profiles of web recipes: list and delete (CLI and dashboard).

A profile is a Chromium user-data folder under RYSH_PROFILES_DIR (mode 0700) holding a
login's cookies; only its name, size and last use ever leave the data directory.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings

from agents.browser.errors import BrowserError
from agents.browser.profiles import delete_profile, list_profiles
from audit.services import audit_record


class ProfileRefused(Exception):
    pass


def profiles_list() -> list[dict]:
    rows = list_profiles(settings.RYSH_PROFILES_DIR)
    for row in rows:
        row["used"] = datetime.fromtimestamp(row["used_at"], tz=UTC)
    return rows


def profile_delete(*, name: str, user=None) -> str:
    try:
        delete_profile(settings.RYSH_PROFILES_DIR, name)
    except BrowserError as exc:
        raise ProfileRefused(str(exc)) from None
    audit_record(actor=user, action="profile.delete", target=("profile", name, f"browser profile {name}"))
    return f"browser profile {name!r} deleted (its logins are gone; `manage.py web_login {name}` makes a new one)"
