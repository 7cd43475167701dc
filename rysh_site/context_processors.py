"""What base.html needs on every page to show only the links a user's role lets through."""

from __future__ import annotations

from rysh_site.roles import NEEDS, roles_of


def roles(request) -> dict:
    mine = roles_of(getattr(request, "user", None)) if getattr(request, "user", None) else set()
    return {"can": {action: bool(mine & needs) for action, needs in NEEDS.items()}}
