"""How a run leaves the worker, written in one place: paused (a reason, its event, the report, the
signal notifications hear) or finished (its cause, its event, the last pass's snapshot, the
report, the signal schedules hear)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.utils import timezone

from runs import events
from runs.engine.controls import keep_stop
from runs.models import Run, RunState
from runs.results import snapshots
from runs.results.report import write_report
from runs.signals import run_finished, run_paused
from runs.states import EventKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pause:
    """The run waits for a person or a quota (a reason the run page and the API show)."""

    reason: str
    detail: str = ""
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Finish:
    """The run is over, with its cause."""

    cause: str


Outcome = Pause | Finish


class Interrupted(Exception):
    """Raised wherever in the loop a run stops (a cancel, a step cap, a quota, a stop, the judge's
    error); the engine catches it once and writes its outcome (outcome_write)."""

    def __init__(self, outcome: Outcome):
        super().__init__(outcome)
        self.outcome = outcome


def outcome_write(run: Run, outcome: Outcome) -> None:
    """The one place a run's outcome is written: paused or finished, event, report, signal."""
    if isinstance(outcome, Pause):
        pause_run(run, outcome.reason, outcome.detail, **outcome.data)
    else:
        finish_run(run, outcome.cause)


def pause_run(run: Run, reason: str, detail: str = "", **data) -> None:
    Run.objects.filter(pk=run.pk).update(state=RunState.PAUSED, pause_reason=reason, control=keep_stop())
    run.refresh_from_db()
    events.record(run, EventKind.PAUSED, f"paused({reason})" + (f": {detail}" if detail else ""), reason=reason, **data)
    _write_report_or_say(run)
    run_paused.send(sender=Run, run=run, reason=reason)  # notifications listen


def finish_run(run: Run, cause: str) -> None:
    Run.objects.filter(pk=run.pk).update(
        state=RunState.FINISHED, cause=cause, phase="", control="", ended_at=timezone.now()
    )
    run.refresh_from_db()
    events.record(run, EventKind.FINISHED, cause, cause=cause)
    _snapshot_or_say(run)
    _write_report_or_say(run)
    run_finished.send(sender=Run, run=run)  # schedules count the outcome; nothing here knows them


def _write_report_or_say(run: Run) -> None:
    """run-report.md beside the results; a folder that refuses it (full, read-only, gone) is
    said in the events and never changes how the run ended: the run page renders the same
    report from the database."""
    try:
        write_report(run)
    except OSError as exc:
        log.warning("run %s: run-report.md not written: %s", run.pk, exc)
        events.record(
            run, EventKind.NOTE, f"run-report.md not written ({exc.strerror or exc}); the run page shows the report"
        )


def _snapshot_or_say(run: Run) -> None:
    """A pass the run ended inside (an error, a stop mid-leg) is kept as it stands."""
    try:
        snapshots.snapshot_unended_pass(run)
    except OSError as exc:
        log.warning("run %s: last pass's snapshot not kept: %s", run.pk, exc)
        events.record(run, EventKind.NOTE, f"the last pass's results were not kept as a snapshot ({exc})")
