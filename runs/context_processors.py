"""What base.html shows on every page: the nav's count of approvals waiting (one query, for a
logged-in user only)."""

from __future__ import annotations

from runs import selectors


def approvals_waiting(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"approvals_waiting": selectors.approvals_pending_count()}
