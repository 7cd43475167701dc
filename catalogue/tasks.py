"""django-q2 entry point for the recipe sync, and the schedule that calls it every minute."""

from __future__ import annotations

from django_q.models import Schedule

from catalogue.sync import recipes_sync

SCHEDULE_NAME = "rysh: sync recipes"
SYNC_FUNC = "catalogue.tasks.sync_task"


def sync_task() -> str:
    """Called by the schedule: bring the catalogue to the tracked branch's head."""
    return recipes_sync().line()


def ensure_sync_schedule() -> Schedule:
    """One schedule, every minute; running it again changes nothing."""
    schedule, _ = Schedule.objects.update_or_create(
        name=SCHEDULE_NAME, defaults={"func": SYNC_FUNC, "schedule_type": Schedule.MINUTES, "minutes": 1, "repeats": -1}
    )
    return schedule
