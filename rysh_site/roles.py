"""Roles are Django groups: viewer (reads), operator (runs and controls), editor (edits and
reviews recipes), admin (everything; superusers are admins). A user with no group reads only."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

ROLES = ("viewer", "operator", "editor", "admin")
# what each action needs: any one of these roles
NEEDS = {
    "view": set(ROLES),
    "operate": {"operator", "admin"},
    "edit": {"editor", "admin"},
    "review": {"editor", "admin"},
    "admin": {"admin"},
    "audit": {"operator", "admin"},  # the audit log names people and their addresses: not for viewers
    "label": {"operator", "editor", "admin"},  # say whether the judge was right on a pass
}


def roles_of(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return {"admin"}
    names = {g.name for g in user.groups.all()} & set(ROLES)
    return names or {"viewer"}


def user_can(user, action: str) -> bool:
    return bool(roles_of(user) & NEEDS[action])


def require(user, action: str) -> None:
    if not user_can(user, action):
        raise PermissionDenied(f"your role cannot {action}")
