"""Execution inside a django-q2 worker: the entry points (ids in), the claim of a queued run,
its heartbeat, and letting go of its tools when it pauses or finishes."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Max, OuterRef, Q, Subquery
from django.utils import timezone

from agents.ports import ToolsPort
from runs import events
from runs.engine import Engine, finish_run
from runs.ledger import settle_pending_steps
from runs.models import Run, RunEvent, RunState
from runs.quota_waits import quota_wake
from runs.results.report import write_report
from runs.services import enqueue_run, runs_sweep_lost
from runs.states import EventKind
from runs.wiring import arm_run, sandbox_missing
from runs.workbench.rejudge import rejudge_execute, rejudges_sweep_lost
from rysh_site import tracing
from workspaces.setup import SetupFailed

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5
LIVE_STATES = (RunState.RUNNING, RunState.AWAITING_APPROVAL)  # a worker holds the run


def execute_run(run_id: int) -> None:
    """django-q2 entry point: drive a queued run with its real ports."""
    drop_dead_connection()
    execute(run_id, arm_run)


def execute_rejudge(rejudge_id: int) -> None:
    """django-q2 entry point: run a queued re-judge (its own claim keeps it to one worker)."""
    drop_dead_connection()
    rejudge_execute(rejudge_id)


# what apps above runs also sweep every minute (evals: cases whose grading was lost); a port they
# fill in their AppConfig.ready(), so runs never imports them
EXTRA_SWEEPS: list[Callable[[], list[str]]] = []


def sweep_lost_runs() -> list[str]:
    """django-q2 entry point of the every-minute sweeper schedule; it also continues the runs
    paused on a quota whose window rolled over meanwhile."""
    drop_dead_connection()
    said = runs_sweep_lost() + requeue_stranded_runs() + quota_wake() + rejudges_sweep_lost()
    return said + [line for sweep in EXTRA_SWEEPS for line in sweep()]


def drop_dead_connection() -> None:
    """Let Django connect afresh when this process's connection died while it was idle (the
    database restarted, failed over or terminated it). django-q2 drops only connections that
    already failed a query or outlived CONN_MAX_AGE, so the task's first query — the claim —
    would fail and leave its run queued with no task."""
    if connection.connection is not None and not connection.is_usable():
        connection.close()


def requeue_stranded_runs(*, now=None) -> list[str]:
    """Queue again the runs that wait as `queued` with no task left to drive them: Redis
    restarted empty, a cluster was killed holding tasks it had taken off the queue, or the
    enqueue failed while the broker was down. Only when the broker's queue is empty (a task
    still waiting there may be theirs) and a run has waited RYSH_WORKER_LOST_SECONDS since it
    was last queued. A task delivered twice is harmless: the claim is atomic. A run that comes
    back (one that waits for a worker that can sandbox) is said to be queued again once, not at
    every sweep."""
    from django_q.brokers import get_broker  # the broker is configured only once Django is set up

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.RYSH_WORKER_LOST_SECONDS)
    newest = RunEvent.objects.filter(run=OuterRef("pk")).order_by("-id").values("kind")[:1]
    waiting = list(
        Run.objects.filter(state=RunState.QUEUED)
        .annotate(since=Max("events__created_at"), newest=Subquery(newest))
        .filter(Q(since__lt=cutoff) | Q(since__isnull=True, created_at__lt=cutoff))
    )
    if not waiting:
        return []
    try:
        if get_broker().queue_size():
            return []
    except Exception:  # the broker is down: the next sweep tries again
        log.warning("the task queue cannot be read; queued runs are checked at the next sweep", exc_info=True)
        return []
    said = []
    for run in waiting:
        waited = int((now - (run.since or run.created_at)).total_seconds())
        if run.newest != EventKind.REQUEUED:
            events.record(
                run, EventKind.REQUEUED, f"queued again: no task for it was left in the queue after {waited}s"
            )
        enqueue_run(run.pk)
        said.append(f"run #{run.pk}: queued {waited}s with no task left in the queue; queued again")
    return said


def worker_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Heartbeat:
    """Marks a run alive while a worker holds it, from a thread with its own connection."""

    def __init__(self, run_id: int):
        self.run_id = run_id
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat-{run_id}")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(timeout=HEARTBEAT_SECONDS * 2)

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                try:
                    Run.objects.filter(pk=self.run_id, state__in=LIVE_STATES).update(heartbeat_at=timezone.now())
                except DatabaseError:
                    # One failed beat (a dropped connection, a database restarting) must not end
                    # the heartbeat: the sweeper would take a run whose worker is alive as lost
                    # and queue it again, and two workers would drive it. Connect afresh.
                    log.warning("heartbeat of run %s failed; trying again", self.run_id, exc_info=True)
                    _close_quietly()
        finally:
            _close_quietly()


def _close_quietly() -> None:
    try:
        connection.close()
    except DatabaseError:
        pass


def execute(run_id: int, armed_for) -> None:
    """Claim a queued run and drive it until it finishes or pauses.

    `armed_for(run)` builds the ports; execute_run passes wiring.arm_run, tests their own.
    """
    if waits_for_a_sandbox(run_id):
        return
    now = timezone.now()
    # queued -> running happens once: a re-delivered task finds the run taken and leaves.
    claimed = Run.objects.filter(pk=run_id, state=RunState.QUEUED).update(
        state=RunState.RUNNING, worker=worker_label(), heartbeat_at=now
    )
    if claimed != 1:
        log.info("run %s is not queued; nothing to do", run_id)
        return
    run = Run.objects.get(pk=run_id)
    if run.started_at is None:
        Run.objects.filter(pk=run_id).update(started_at=now)
        run.started_at = now
    settle_pending_steps(run)
    run.refresh_from_db()
    # the heartbeat starts before arming: a web run may wait for its browser profile
    with Heartbeat(run_id), tracing.session(run):
        try:
            armed = armed_for(run)
        except SetupFailed as exc:  # its cause as it is; no model was called
            finish_run(run, str(exc))
            return
        except Exception as exc:  # e.g. the recipe's script or API key went away since start
            finish_run(run, f"error: {exc}")
            return
        tracing.trace_model(run, armed)
        events.record(run, EventKind.RUNNING, f"running on {armed.model.label}", model=armed.model.label)
        for note in armed.tools.notes:
            events.record(run, EventKind.NOTE, note)
        try:
            Engine(run, armed).go()
        finally:
            release_tools(run, armed.tools)
        settle_orphaned_steps(run)


def waits_for_a_sandbox(run_id: int) -> bool:
    """A worker that cannot sandbox never takes a workdir run (it would never run unsandboxed):
    the run stays queued, unclaimed, for a worker that can, and says why once while it waits.
    This worker drops the task; the sweeper queues the run again (requeue_stranded_runs), so
    a bad worker sees it again at most once a sweep, never in a loop of its own."""
    problem = sandbox_missing()
    if problem is None:
        return False
    run = Run.objects.filter(pk=run_id, state=RunState.QUEUED, workspace__isnull=False).first()
    if run is None:  # not a workdir run, or not queued: the claim decides as for any run
        return False
    log.warning("run %s left queued: this worker cannot sandbox (%s)", run_id, problem)
    ran = run.events.filter(kind=EventKind.RUNNING).order_by("-id").values_list("id", flat=True).first() or 0
    if not run.events.filter(kind=EventKind.WAITING, id__gt=ran).exists():  # said once while it waits
        said = f"waiting for a worker that can sandbox: this worker ({worker_label()}) has no working bubblewrap: {problem}"
        events.record(run, EventKind.WAITING, said, worker=worker_label())
    return True


def settle_orphaned_steps(run: Run) -> None:
    """A call whose settle failed (the database connection dropped inside its transaction)
    leaves its step pending when the engine then ends the run on that error; nobody sweeps a
    finished run, so without this the call would be counted nowhere. Count it at its
    reservation, as for a lost worker, and write the report again with the total."""
    run.refresh_from_db()
    if run.state != RunState.FINISHED:
        return  # a paused or live run keeps its pending steps for the next claim or the sweeper
    settled = settle_pending_steps(run)
    if settled:
        events.record(run, EventKind.NOTE, f"{settled} call(s) whose settle failed counted in full")
        write_report(run)


def release_tools(run: Run, tools: ToolsPort) -> None:
    """The worker lets go of the run (paused or finished): close its browser, if any."""
    try:
        tools.close()
    except Exception:  # closing must never turn a finished run into an error
        log.warning("closing the tools of run %s failed", run.pk, exc_info=True)
    for video in tools.videos:
        events.record(run, EventKind.VIDEO, f"video saved: {Path(video).name}", path=video)
