"""django-q2 entry point of deliveries (services queue it by its dotted path, DELIVER_FUNC)."""

from __future__ import annotations

from notify.services import deliver as deliver_one


def deliver(delivery_id: int) -> str:
    """One attempt at a delivery; a failure schedules the next."""
    return deliver_one(delivery_id)
