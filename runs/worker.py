"""Execution inside a django-q2 worker: the entry points (ids in), the claim of a queued run,
its heartbeat, and letting go of its tools when it pauses or finishes."""

from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path

from django.db import connection
from django.utils import timezone

from runs import events
from runs.engine import Engine, finish_run
from runs.ledger import settle_pending_steps
from runs.models import Run, RunState
from runs.services import runs_sweep_lost
from runs.wiring import arm_run

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5
LIVE_STATES = (RunState.RUNNING, RunState.AWAITING_APPROVAL)  # a worker holds the run


def execute_run(run_id: int) -> None:
    """django-q2 entry point: drive a queued run with its real ports."""
    execute(run_id, arm_run)


def sweep_lost_runs() -> list[str]:
    """django-q2 entry point of the every-minute sweeper schedule."""
    return runs_sweep_lost()


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
                Run.objects.filter(pk=self.run_id, state__in=LIVE_STATES).update(heartbeat_at=timezone.now())
        finally:
            connection.close()


def execute(run_id: int, armed_for) -> None:
    """Claim a queued run and drive it until it finishes or pauses.

    `armed_for(run)` builds the ports; execute_run passes wiring.arm_run, tests their own.
    """
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
    with Heartbeat(run_id):
        try:
            armed = armed_for(run)
        except Exception as exc:  # e.g. the recipe's script or API key went away since start
            finish_run(run, f"error: {exc}")
            return
        events.record(run, "running", f"running on {armed.model.label}", model=armed.model.label)
        for note in getattr(armed.tools, "notes", []):
            events.record(run, "note", note)
        try:
            Engine(run, armed).go()
        finally:
            release_tools(run, armed.tools)


def release_tools(run: Run, tools) -> None:
    """The worker lets go of the run (paused or finished): close its browser, if any."""
    close = getattr(tools, "close", None)
    if close is None:
        return
    try:
        close()
    except Exception:  # closing must never turn a finished run into an error
        log.warning("closing the tools of run %s failed", run.pk, exc_info=True)
    for video in getattr(tools, "videos", []):
        events.record(run, "video", f"video saved: {Path(video).name}", path=video)
