"""Reading the audit log: the filtered list (page and CSV) and a run's own entries. Who may read
it is rysh_site.roles' "audit" action."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from audit.models import AuditEntry
from rysh_site.filters import filter_given

RUN_ENTRY_LIMIT = 50


def audit_entries(
    *,
    who: str = "",
    action: str = "",
    target_type: str = "",
    target_id: str = "",
    source: str = "",
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[AuditEntry]:
    """Newest first; each filter applies only when given. `action` is a prefix (`run.` is
    every run control); dates are whole local days, as a range the `at` index can use."""
    entries = filter_given(
        AuditEntry.objects.all(),
        actor_name__icontains=who,
        action__startswith=action,
        target_type=target_type,
        target_id=target_id,
        source=source,
        at__gte=_start_of(since) if since else None,
        at__lt=_start_of(until + timedelta(days=1)) if until else None,
    )
    return entries.order_by("-at", "-id")


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def audit_for_run(run_id: int, *, limit: int = RUN_ENTRY_LIMIT) -> list[AuditEntry]:
    """What people did to one run, newest first (its page's timeline)."""
    return list(audit_entries(target_type="run", target_id=str(run_id))[:limit])
