"""django-q2 entry point for the recipe sync, and the schedule that calls it every minute."""
from __future__ import annotations

SCHEDULE_NAME = "rysh: sync recipes"
SYNC_FUNC = "automations.tasks_sync.sync_task"


def sync_task() -> str:
    """Called by the schedule: bring the catalogue to the tracked branch's head."""
    from automations.sync import recipes_sync
    return recipes_sync().line()


def ensure_sync_schedule():
    """One schedule, every minute; running it again changes nothing."""
    from django_q.models import Schedule
    schedule, _ = Schedule.objects.update_or_create(
        name=SCHEDULE_NAME,
        defaults={"func": SYNC_FUNC, "schedule_type": Schedule.MINUTES, "minutes": 1,
                  "repeats": -1})
    return schedule
