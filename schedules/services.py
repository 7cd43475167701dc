"""Schedules (docs/schedules.md): recipes' `schedule:` and hand-made ones, on django-q2's scheduler.

- A recipe's `schedule:` keeps one schedule named `auto-<kind>-<name>` in step with the
  catalogue after every sync; `off`/`none`, or a recipe that leaves the repository, removes it.
- Hand-made ones (`auto <kind> schedule add NAME WHEN RECIPE [ARGS…] [--tz TZ]`) run a recipe
  with arguments.
- When: 5 cron fields, `@hourly`, `@daily`, `@weekly`, `@monthly` (cron, read in the
  schedule's timezone) or `@every 30m` (a fixed interval, whole minutes).
- No backfill: django-q2's catch_up is off, so a worker that was down fires a missed
  schedule once, not once per missed tick.
- Scheduled runs are headless, and started for the schedule's owner (`schedule_owner`): the one
  set by hand (`--owner`, `auto <kind> schedule owner NAME USER`), else the service user
  RYSH_SCHEDULE_OWNER names, else — for a recipe's own schedule — the person who approved the
  last change request merged into the recipe. Their user quota counts the runs.
- Failures: a tick that cannot start its run (a broken recipe, a missing key, or the
  previous run still active — that tick is skipped) is a failure, and so is a run that ends
  with any cause but `done` or `fulfilled` (`stopped by user` counts neither way). After
  RYSH_SCHEDULE_MAX_FAILURES (5) in a row the schedule is disabled until someone enables it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_q.models import Schedule

from audit.services import audit_record
from budgets import when as when_
from catalogue.models import Recipe
from reviews.models import ChangeAction, ChangeRequest, ChangeState
from runs import services
from runs.models import Run, RunState
from schedules.models import RecipeSchedule
from schedules.signals import schedule_disabled

log = logging.getLogger(__name__)

FUNC = "schedules.tasks.scheduled_run"  # queued by path: the entry point imports this module
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,80}\Z")
SUCCESS = ("done", "fulfilled")
NEUTRAL = ("stopped by user",)


class ScheduleError(ValueError):
    pass


def recipe_schedule_name(kind: str, name: str) -> str:
    return f"auto-{kind}-{name}"[:100]


# -- when ---------------------------------------------------------------------------------------


def parse_when(when: str) -> dict:
    """Schedule fields for django-q2: a cron or a whole number of minutes (budgets.when reads it)."""
    try:
        parsed = when_.parse_when(when)
    except when_.WhenError as exc:
        raise ScheduleError(str(exc)) from None
    if parsed.minutes:
        return {"schedule_type": Schedule.MINUTES, "cron": None, "minutes": parsed.minutes}
    return {"schedule_type": Schedule.CRON, "cron": parsed.cron, "minutes": None}


def zone(name: str) -> ZoneInfo:
    try:
        return when_.zone(name, settings.TIME_ZONE)
    except when_.WhenError as exc:
        raise ScheduleError(str(exc)) from None


def next_tick(fields: dict, tz: str, after: datetime | None = None) -> datetime:
    """The next tick strictly after `after` (now): never one in the past, so nothing backfills."""
    parsed = when_.When(
        cron=fields["cron"], minutes=fields["minutes"] if fields["schedule_type"] == Schedule.MINUTES else None
    )
    return when_.next_tick(parsed, zone(tz), after or timezone.now())


# -- saving ----------------------------------------------------------------------------------------


def schedule_save(
    *, name: str, origin: str, kind: str, recipe: str, args: list[str], when: str, tz: str = ""
) -> tuple[RecipeSchedule, bool]:
    """Create or update a schedule; (the schedule, whether anything changed)."""
    fields = parse_when(when)
    zone(tz)
    existing = RecipeSchedule.objects.filter(name=name).select_related("q").first()
    if existing and (existing.when, existing.timezone, existing.kind, existing.recipe, existing.args) == (
        when,
        tz,
        kind,
        recipe,
        list(args),
    ):
        return existing, False
    with transaction.atomic():
        q = existing.q if existing else Schedule(name=name, func=FUNC)
        q.args = repr((name,))
        q.schedule_type, q.cron, q.minutes = fields["schedule_type"], fields["cron"], fields["minutes"]
        q.repeats = -1 if (existing is None or existing.enabled) else 0
        q.next_run = next_tick(fields, tz)
        q.save()
        # django-q2 recomputes a new cron schedule's next_run in its own zone; ours wins
        Schedule.objects.filter(pk=q.pk).update(next_run=next_tick(fields, tz))
        row = existing or RecipeSchedule(name=name, q=q, origin=origin)
        row.kind, row.recipe, row.args, row.when, row.timezone = kind, recipe, list(args), when, tz
        row.save()
    return row, True


def schedules_sync_recipes() -> list[str]:
    """Keep `auto-<kind>-<name>` schedules in step with the catalogue's recipes."""
    wanted = {}
    for kind, name, spec in Recipe.objects.filter(archived=False, good__isnull=False).values_list(
        "kind", "name", "good__spec"
    ):
        when = (spec or {}).get("schedule")
        if when and when != "off":
            wanted[recipe_schedule_name(kind, name)] = (kind, name, when)
    said = []
    for row in RecipeSchedule.objects.filter(origin=RecipeSchedule.RECIPE).select_related("q"):
        if row.name not in wanted:
            row.q.delete()  # cascades to the row
            said.append(f"schedule {row.name} removed")
    for name, (kind, recipe, when) in wanted.items():
        try:
            _, changed = schedule_save(
                name=name, origin=RecipeSchedule.RECIPE, kind=kind, recipe=recipe, args=[], when=when
            )
        except ScheduleError as exc:
            log.warning("recipe %s/%s: %s", kind, recipe, exc)
            continue
        if changed:
            said.append(f"schedule {name}: {when}")
    return said


def schedule_add(
    *, name: str, kind: str, recipe: str, args: list[str], when: str, tz: str = "", owner=None
) -> RecipeSchedule:
    if not NAME_RE.match(name) or name.startswith("auto-"):
        raise ScheduleError(
            f"{name!r}: a schedule name is lowercase letters, digits, '.', '_' or '-' "
            "and does not start with auto- (kept for recipes' own schedules)"
        )
    if RecipeSchedule.objects.filter(name=name).exists():
        raise ScheduleError(f"a schedule named {name!r} already exists; remove it first")
    with transaction.atomic():
        row, _ = schedule_save(
            name=name, origin=RecipeSchedule.MANUAL, kind=kind, recipe=recipe, args=args, when=when, tz=tz
        )
        if owner is not None:
            RecipeSchedule.objects.filter(pk=row.pk).update(owner=owner)
            row.owner = owner
    detail = {"when": when, "tz": tz, "args": list(args)} | ({"owner": owner.get_username()} if owner else {})
    audit_record(action="schedule.add", target=_audit_target(row), detail=detail)
    return row


def schedule_set_owner(*, name: str, owner=None) -> str:
    """Whom a schedule's runs are started for (None: the default owner, if any); any schedule,
    a recipe's own too."""
    row = schedule_get(name)
    RecipeSchedule.objects.filter(pk=row.pk).update(owner=owner)
    row.owner = owner
    who = owner.get_username() if owner else None
    audit_record(action="schedule.owner", target=_audit_target(row), detail={"owner": who})
    if owner is not None:
        return f"schedule {name} is owned by {who}: its runs are started for them and count against their quota"
    default = schedule_owner(row)
    if default.user is not None:
        return (
            f"schedule {name} has no owner of its own now: its runs are started for {default.shown} "
            "and count against their quota"
        )
    return f"schedule {name} has no owner now: its runs count against the installation and recipe quotas only"


# -- whom its runs are started for --------------------------------------------------------------

BY_HAND, SERVICE, APPROVER = "", "RYSH_SCHEDULE_OWNER", "approved its last change"


@dataclass(frozen=True)
class Owner:
    """Whom a schedule's runs are started for, and why (`why` is empty for one set by hand)."""

    user: object | None
    why: str = BY_HAND
    problem: str = ""  # RYSH_SCHEDULE_OWNER names no user: the tick fails rather than run unowned

    @property
    def shown(self) -> str:
        if self.problem:
            return f"none ({self.problem})"
        if self.user is None:
            return "-"
        name = self.user.get_username()
        return f"{name} ({self.why})" if self.why else name


def schedule_owner(row: RecipeSchedule) -> Owner:
    """The schedule's own owner; else the service user RYSH_SCHEDULE_OWNER; else, for a recipe's
    own schedule, the person who approved the last change request merged into the recipe (who
    let the schedule in as it is). Nobody only for a recipe no change request ever touched."""
    if row.owner_id is not None:
        return Owner(row.owner)
    service = settings.RYSH_SCHEDULE_OWNER
    if service:
        user = get_user_model().objects.filter(username=service, is_active=True).first()
        if user is None:
            return Owner(None, SERVICE, problem=f"RYSH_SCHEDULE_OWNER names no active user {service!r}")
        return Owner(user, SERVICE)
    if row.origin == RecipeSchedule.RECIPE:
        approver = last_approver(kind=row.kind, name=row.recipe)
        if approver is not None:
            return Owner(approver, APPROVER)
    return Owner(None)


def last_approver(*, kind: str, name: str):
    """Who merged (the last approval) the newest change request that left the recipe as it is."""
    merged = (
        ChangeRequest.objects.filter(state=ChangeState.MERGED, kind=kind, merged_by__isnull=False)
        .filter(Q(new_name=name) | Q(new_name="", name=name))
        .exclude(action=ChangeAction.DELETE)
        .select_related("merged_by")
        .order_by("-merged_at", "-id")
        .first()
    )
    return merged.merged_by if merged else None


def _audit_target(row: RecipeSchedule) -> tuple[str, int, str]:
    return ("schedule", row.pk, f"schedule {row.name} ({row.kind}/{row.recipe})")


def schedule_get(name: str) -> RecipeSchedule:
    row = RecipeSchedule.objects.filter(name=name).select_related("q", "last_run").first()
    if row is None:
        raise ScheduleError(f"no schedule named {name!r}")
    return row


def schedule_remove(*, name: str) -> str:
    row = schedule_get(name)
    if row.origin == RecipeSchedule.RECIPE:
        raise ScheduleError(
            f"{name} comes from the recipe's schedule: set `schedule: off` in "
            f"{row.kind}/{row.recipe} (or disable it here)"
        )
    target = _audit_target(row)
    row.q.delete()
    audit_record(action="schedule.remove", target=target)
    return f"schedule {name} removed"


def schedule_enable(*, name: str) -> str:
    row = schedule_get(name)
    fields = parse_when(row.when)
    with transaction.atomic():
        RecipeSchedule.objects.filter(pk=row.pk).update(enabled=True, failures=0, disabled_reason="")
        # from the next tick on: what was missed while disabled is not run (no backfill)
        Schedule.objects.filter(pk=row.q_id).update(repeats=-1, next_run=next_tick(fields, row.timezone))
    audit_record(action="schedule.enable", target=_audit_target(row))
    return f"schedule {name} enabled; next run {timezone.localtime(next_tick(fields, row.timezone)):%Y-%m-%d %H:%M %Z}"


def schedule_disable(*, name: str, reason: str = "disabled by hand") -> str:
    row = schedule_get(name)
    with transaction.atomic():
        RecipeSchedule.objects.filter(pk=row.pk).update(enabled=False, disabled_reason=reason[:500])
        Schedule.objects.filter(pk=row.q_id).update(repeats=0)  # django-q2 skips repeats=0
    # also after too many failures in a row: then the reason says so and, in a worker, source is system
    audit_record(action="schedule.disable", target=_audit_target(row), detail={"reason": reason})
    return f"schedule {name} disabled ({reason})"


# -- ticks and outcomes ------------------------------------------------------------------------------


def schedule_tick(name: str) -> str:
    """What a schedule does when django-q2 fires it: start its run, headless."""
    row = RecipeSchedule.objects.filter(name=name).select_related("q", "last_run", "owner").first()
    if row is None or not row.enabled:
        return f"schedule {name}: gone or disabled; nothing to do"
    now = timezone.now()
    if row.timezone and row.q.schedule_type == Schedule.CRON:
        # django-q2 reads crons in its own zone; this schedule's zone sets the next tick
        Schedule.objects.filter(pk=row.q_id).update(next_run=next_tick(parse_when(row.when), row.timezone, now))
    RecipeSchedule.objects.filter(pk=row.pk).update(last_tick_at=now)
    if row.last_run is not None and row.last_run.state != RunState.FINISHED and row.last_run.is_active:
        return _failed(row, f"tick skipped: run #{row.last_run.pk} is still {row.last_run.state_label}")
    owner = schedule_owner(row)
    if owner.problem:
        return _failed(row, f"tick failed: {owner.problem}")
    try:
        # started for its owner (if any): the run names them and their user quota counts it
        run = services.run_start(
            kind=row.kind,
            name_or_path=row.recipe,
            args=list(row.args),
            headless=True,
            user=owner.user,
            schedule=row.name,
        )
    except services.RunRefused as exc:
        return _failed(row, f"tick failed: {exc}")
    RecipeSchedule.objects.filter(pk=row.pk).update(last_run=run, last_message=f"started run #{run.pk}")
    return f"schedule {name}: started run #{run.pk}"


def schedule_run_finished(run: Run) -> None:
    """Called as a run ends: its schedule's run of failures grows or resets."""
    for row in RecipeSchedule.objects.filter(last_run=run):
        if run.cause in SUCCESS:
            RecipeSchedule.objects.filter(pk=row.pk).update(failures=0, last_message=f"run #{run.pk}: {run.cause}")
        elif run.cause not in NEUTRAL:
            _failed(row, f"run #{run.pk} ended: {run.cause}")


def _failed(row: RecipeSchedule, message: str) -> str:
    row.refresh_from_db(fields=["failures"])
    failures = row.failures + 1
    RecipeSchedule.objects.filter(pk=row.pk).update(failures=failures, last_message=message[:500])
    limit = settings.RYSH_SCHEDULE_MAX_FAILURES
    if failures >= limit:
        reason = f"{failures} failures in a row; last: {message}"
        schedule_disable(name=row.name, reason=reason)
        schedule_disabled.send(sender=RecipeSchedule, schedule=row, reason=reason)  # notifications listen
        return f"schedule {row.name}: {message}; disabled after {failures} failures in a row"
    return f"schedule {row.name}: {message} ({failures}/{limit} failures in a row)"
