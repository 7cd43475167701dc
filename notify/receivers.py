"""What notify does when runs, schedules and reviews send their signals: connected in
apps.ready(). Each receiver works in a savepoint and logs its own failure, so a notification
that cannot be queued never breaks (or rolls back) what caused it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.dispatch import receiver

from evals.models import CaseState, Suite, SuiteSide
from evals.signals import eval_failed
from notify import events
from notify.models import Channel
from notify.selectors import recipe_rules, run_rules
from notify.services import notify, notify_once
from reviews.signals import change_approved, change_conflict, change_opened
from runs.signals import approval_requested, budget_crossed, run_finished, run_paused
from schedules.signals import schedule_disabled

log = logging.getLogger(__name__)


def _safely(what: str, queue: Callable[[], object]) -> None:
    try:
        if not Channel.objects.filter(enabled=True).exists():
            return  # nobody listens: no payload to build, no recipe to read
        with transaction.atomic():
            queue()
    except Exception:  # notifications are never worth failing the run, schedule or review for
        log.exception("notification for %s not queued", what)


@receiver(run_finished, dispatch_uid="notify.run_finished")
def on_run_finished(sender, *, run, **kwargs) -> None:
    _safely(f"run #{run.pk} ended", lambda: notify(events.run_ended(run), rules=run_rules(run)))


@receiver(approval_requested, dispatch_uid="notify.approval_requested")
def on_approval_requested(sender, *, approval, **kwargs) -> None:
    run = approval.run
    _safely(f"approval #{approval.pk}", lambda: notify(events.approval_waiting(approval), rules=run_rules(run)))


@receiver(run_paused, dispatch_uid="notify.run_paused")
def on_run_paused(sender, *, run, reason, **kwargs) -> None:
    _safely(f"run #{run.pk} paused", lambda: notify(events.run_paused(run, reason), rules=run_rules(run)))


@receiver(budget_crossed, dispatch_uid="notify.budget_crossed")
def on_budget_crossed(sender, *, run, percent, **kwargs) -> None:
    key = f"run:{run.pk}:budget.{percent}"
    _safely(key, lambda: notify_once(key, events.budget(run, percent), rules=run_rules(run)))


@receiver(schedule_disabled, dispatch_uid="notify.schedule_disabled")
def on_schedule_disabled(sender, *, schedule, reason, **kwargs) -> None:
    _safely(
        f"schedule {schedule.name}",
        lambda: notify(events.schedule_disabled(schedule, reason), rules=recipe_rules(schedule.kind, schedule.recipe)),
    )


@receiver(eval_failed, dispatch_uid="notify.eval_failed")
def on_eval_failed(sender, *, suite, **kwargs) -> None:
    """After the grading commits: the notice reads the suite's cases as they were saved, and a
    grading rolled back sends nothing."""
    transaction.on_commit(lambda: _safely(f"suite #{suite.pk}", lambda: _eval_failed(suite.pk)))


def _eval_failed(suite_id: int) -> None:
    suite = Suite.objects.filter(pk=suite_id).first()
    if suite is None or not suite.cases.filter(state__in=(CaseState.FAILED, CaseState.ERROR)).exists():
        return  # gone, or graded again since (`--result`) with nothing failing
    kind, _, name = suite.target.partition("/")
    rules = recipe_rules(kind, name) if suite.side != SuiteSide.PATH else []  # its recipe's `notify:`
    notify(events.eval_failed(suite), rules=rules)


def _on_change(event: str):
    def on_change(sender, *, change, **kwargs) -> None:
        _safely(
            f"change #{change.pk}",
            lambda: notify(events.change(event, change), rules=recipe_rules(change.kind, change.name)),
        )

    return on_change


for _signal, _event in (
    (change_opened, "change.opened"),
    (change_approved, "change.approved"),
    (change_conflict, "change.conflict"),
):
    _signal.connect(_on_change(_event), dispatch_uid=f"notify.{_event}", weak=False)
