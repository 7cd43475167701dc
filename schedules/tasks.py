"""django-q2 entry point of every schedule (schedules queue it by its dotted path, FUNC)."""

from __future__ import annotations

from schedules.services import schedule_tick


def scheduled_run(name: str) -> str:
    """A schedule fired: start its recipe's run, headless."""
    return schedule_tick(name)
