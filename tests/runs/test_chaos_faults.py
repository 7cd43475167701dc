"""Faults found by `python -m bench.chaos`: what a worker does when its database connection
drops, and queued runs whose task the broker lost."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from runs import worker
from runs.models import Run, RunEvent

RECIPE = """\
---
loop:
  do:
    max_iterations: 3
---
Take notes.
"""


class FlakyRuns:
    """Stands in for Run in the heartbeat: the first beat fails as a dropped connection does."""

    def __init__(self):
        self.calls = 0
        self.beats = threading.Event()
        self.objects = self

    def filter(self, **_):
        return self

    def update(self, **_):
        self.calls += 1
        if self.calls == 1:
            raise OperationalError("terminating connection due to administrator command")
        if self.calls >= 3:
            self.beats.set()
        return 1


def test_it_keeps_beating_after_a_beat_failed(monkeypatch):
    runs = FlakyRuns()
    monkeypatch.setattr(worker, "Run", runs)
    monkeypatch.setattr(worker, "HEARTBEAT_SECONDS", 0.01)
    with worker.Heartbeat(1):
        # before the fix the thread died with the first failure: the sweeper then took a run
        # whose worker was alive as lost, and two workers drove it
        assert runs.beats.wait(5), f"the heartbeat stopped after {runs.calls} beat(s)"


class DeadConnection:
    def __init__(self, usable: bool):
        self.connection = object()  # open, as far as Django knows
        self.usable = usable
        self.closed = False

    def is_usable(self):
        return self.usable

    def close(self):
        self.closed = True


@pytest.mark.parametrize("usable", [False, True])
def test_it_drops_a_connection_that_died_while_the_worker_was_idle(monkeypatch, usable):
    dead = DeadConnection(usable)
    monkeypatch.setattr(worker, "connection", dead)
    worker.drop_dead_connection()
    assert dead.closed is not usable


class Broker:
    def __init__(self, size=0, down=False):
        self.size, self.down = size, down

    def queue_size(self):
        if self.down:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return self.size


@pytest.fixture
def requeue(monkeypatch):
    enqueued = []
    monkeypatch.setattr(worker, "enqueue_run", enqueued.append)

    def requeue(broker=None, *, after=None):
        monkeypatch.setattr("django_q.brokers.get_broker", lambda *a, **k: broker or Broker())
        later = timezone.now() + timedelta(seconds=after if after is not None else 3600)
        return worker.requeue_stranded_runs(now=later), enqueued

    return requeue


def test_it_queues_again_a_run_whose_task_the_broker_lost(start, requeue):
    run = start(RECIPE)
    said, enqueued = requeue()
    assert enqueued == [run.pk]
    assert said == [f"run #{run.pk}: queued 3600s with no task left in the queue; queued again"]
    assert RunEvent.objects.filter(run=run, kind="requeued").exists()
    # the event restarts its clock: the next sweep leaves it alone
    assert requeue(after=10) == ([], [run.pk])


def test_it_leaves_a_run_queued_a_moment_ago(start, requeue, settings):
    start(RECIPE)
    assert requeue(after=settings.RYSH_WORKER_LOST_SECONDS - 5) == ([], [])


def test_it_leaves_queued_runs_while_tasks_wait_in_the_queue(start, requeue):
    start(RECIPE)
    assert requeue(Broker(size=1)) == ([], [])


def test_it_leaves_queued_runs_while_the_broker_is_down(start, requeue):
    start(RECIPE)
    assert requeue(Broker(down=True)) == ([], [])


def test_it_leaves_runs_that_are_not_queued(start, requeue):
    run = start(RECIPE)
    Run.objects.filter(pk=run.pk).update(state="running", heartbeat_at=timezone.now())
    assert requeue() == ([], [])


def test_the_sweeper_schedule_also_requeues(start, monkeypatch):
    run = start(RECIPE)
    RunEvent.objects.filter(run=run).update(created_at=timezone.now() - timedelta(hours=1))
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=1))
    enqueued = []
    monkeypatch.setattr(worker, "enqueue_run", enqueued.append)
    monkeypatch.setattr("django_q.brokers.get_broker", lambda *a, **k: Broker())
    started = time.monotonic()
    said = worker.sweep_lost_runs()
    assert enqueued == [run.pk], said
    assert time.monotonic() - started < 5


def test_a_dropped_database_leaves_the_run_to_the_sweeper_and_the_call_counted(start, monkeypatch):
    """bench.chaos, seed 20261130: PostgreSQL terminated the worker's connection inside a
    step's settle. The run must not end on that error: it stays `running` with its checkpoint,
    the sweeper counts the call in flight at its reservation and continues the run, and it
    lands with a real cause."""
    from runs import ledger, services
    from runs.models import LedgerEntry, RunState, Step
    from tests.conftest import drive
    from tests.fake_model import FakeModel

    settle = ledger.Ledger.settle
    failed = []

    def settle_once(self, *args, **kwargs):
        if not failed:
            failed.append(True)
            raise OperationalError("terminating connection due to administrator command")
        return settle(self, *args, **kwargs)

    monkeypatch.setattr(ledger.Ledger, "settle", settle_once)
    run = start(RECIPE)
    with pytest.raises(OperationalError):
        drive(run, FakeModel(task=[{"text": "Done."}]))
    run.refresh_from_db()
    assert run.state == RunState.RUNNING and run.cause == ""
    first = Step.objects.get(run_pass__run=run)
    assert first.status == "pending"
    later = timezone.now() + timedelta(seconds=3600)
    said = services.runs_sweep_lost(now=later)
    assert any(f"run #{run.pk}" in line for line in said), said
    run = drive(Run.objects.get(pk=run.pk), FakeModel(task=[{"text": "Done."}]))
    assert run.cause == "done"
    first.refresh_from_db()
    assert first.status == "lost" and first.counted_tokens == first.reserved_tokens > 0
    total = sum(LedgerEntry.objects.filter(run=run).values_list("counted_tokens", flat=True))
    assert run.tokens_counted == total


def test_a_report_the_folder_refuses_never_changes_how_the_run_ended(start, monkeypatch):
    """bench.chaos: the results folder unwritable at the moment a run finished made the
    engine finish it a second time with `error: PermissionError`, and no signal was sent."""
    from runs.engine import outcome
    from runs.signals import run_finished
    from tests.conftest import drive
    from tests.fake_model import FakeModel

    def refuse(run):
        raise PermissionError(13, "Permission denied")

    finished = []
    monkeypatch.setattr(outcome, "write_report", refuse)
    run_finished.connect(lambda sender, run, **_: finished.append(run.cause), weak=False, dispatch_uid="t")
    try:
        run = drive(start(RECIPE), FakeModel(task=[{"text": "Done."}]))
    finally:
        run_finished.disconnect(dispatch_uid="t")
    assert run.cause == "done" and finished == ["done"]
    note = RunEvent.objects.get(run=run, kind="note", message__startswith="run-report.md not written")
    assert "Permission denied" in note.message
