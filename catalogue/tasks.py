"""django-q2 entry points for the recipe sync — the schedule's every minute, and the one a push
hook's accepted delivery queues — and the schedule itself."""

from __future__ import annotations

from django.conf import settings
from django_q.models import Schedule

from audit.context import system_action
from audit.services import audit_record
from catalogue.models import GitDelivery
from catalogue.repo import RepoError, redact
from catalogue.sync import recipes_sync

SCHEDULE_NAME = "rysh: sync recipes"
SYNC_FUNC = "catalogue.tasks.sync_task"


def sync_task() -> str:
    """Called by the schedule: bring the catalogue to the tracked branch's head."""
    return recipes_sync().line()


def hook_sync(delivery_id: int) -> str:
    """Queued by the push hook for an accepted delivery: sync, then write the sync's line (or its
    error, tokens hidden) on the delivery, and audit it as the system's, via that delivery."""
    target = ("repo", "", redact(settings.RYSH_RECIPES_REPO))
    delivery = GitDelivery.objects.filter(pk=delivery_id)
    with system_action():
        try:
            result = recipes_sync()
        except RepoError as exc:
            said = f"sync failed: {redact(str(exc))}"[:500]
            # a failed sync lets go of the delivery id: redelivering it from the forge tries again
            delivery.update(outcome=GitDelivery.FAILED, sync=said)
            audit_record(
                action="recipes.sync", target=target, detail={"via": f"push hook #{delivery_id}", "error": said}
            )
            return said
        except Exception:
            delivery.update(outcome=GitDelivery.FAILED, sync="sync failed: internal error (see the worker's log)")
            raise
        delivery.update(sync=result.line())
        detail = {"via": f"push hook #{delivery_id}", "head": result.head[:12], "changed": result.changed}
        audit_record(action="recipes.sync", target=target, detail=detail)
    return result.line()


def ensure_sync_schedule() -> Schedule:
    """One schedule, every minute; running it again changes nothing."""
    schedule, _ = Schedule.objects.update_or_create(
        name=SCHEDULE_NAME, defaults={"func": SYNC_FUNC, "schedule_type": Schedule.MINUTES, "minutes": 1, "repeats": -1}
    )
    return schedule
