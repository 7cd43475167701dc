"""A worker that cannot sandbox is not ready and never takes a coding run (docs/coding-loops.md,
the sandbox): the run stays queued, unclaimed, says once why it waits, and is picked up by a
worker that can once the sweeper queues it again. "No bubblewrap" is a RYSH_SANDBOX_BWRAP that
names no program; everything else is real (git, bubblewrap, SQLite)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.sandbox import sandbox_problem
from runs import selectors, services, worker
from runs.models import Run, RunEvent, WorkerBeat
from tests.conftest import ONE_PASS, drive
from tests.fake_model import FakeModel, tool
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import FIX, code_repo, start_fix  # noqa: F401 (fixtures)
from workspaces.models import WorkspaceState

pytestmark = pytest.mark.django_db

MISSING = "/nonexistent/bwrap"


@pytest.fixture(autouse=True)
def fresh_probe():
    """Each test probes bubblewrap afresh (the answer is kept per process and setting)."""
    sandbox_problem.cache_clear()
    yield
    sandbox_problem.cache_clear()


@pytest.fixture
def enqueued(monkeypatch):
    """The sweeper's queue (an empty broker) and what it queues again."""
    queued = []
    monkeypatch.setattr(worker, "enqueue_run", queued.append)
    monkeypatch.setattr("django_q.brokers.get_broker", lambda *a, **k: EmptyBroker())
    return queued


class EmptyBroker:
    def queue_size(self):
        return 0


def fixer():
    return FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Fixed mean()."}])


def sweep(minutes: int) -> list[str]:
    return worker.requeue_stranded_runs(now=timezone.now() + timedelta(minutes=minutes))


def test_a_worker_without_bubblewrap_leaves_a_coding_run_queued_says_why_once_and_one_that_can_takes_it(
    start_fix, settings, enqueued
):
    run = start_fix()
    settings.RYSH_SANDBOX_BWRAP = MISSING  # this worker's machine has no bubblewrap
    model = fixer()
    for _ in range(3):  # the task delivered again and again: never claimed, said once
        drive(run, model)
    run.refresh_from_db()
    assert (run.state, run.worker, run.started_at, run.cause) == ("queued", "", None, "")
    assert model.calls == 0 and run.workspace.state == WorkspaceState.PENDING
    said = list(RunEvent.objects.filter(run=run, kind="waiting").values_list("message", flat=True))
    assert len(said) == 1
    assert said[0].startswith(
        f"waiting for a worker that can sandbox: this worker ({worker.worker_label()}) has no working bubblewrap: "
        f"bubblewrap is not installed ('{MISSING}' not found)"
    )
    # the run page says why, beside the copy still to be made
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    changes = page.split('<section id="run-changes"', 1)[1].split("</section>", 1)[0]
    assert 'id="run-sandbox-wait"' in changes and "has no working bubblewrap" in changes
    assert "The working copy is made when a worker takes the run." in changes
    # the sweeper queues it again once a sweep, and says so once: the bad worker never loops on it
    assert sweep(5) and sweep(6) and enqueued == [run.pk, run.pk]
    drive(run, model)
    assert RunEvent.objects.filter(run=run, kind="requeued").count() == 1
    assert RunEvent.objects.filter(run=run, kind="waiting").count() == 1
    # a worker that can sandbox takes it
    settings.RYSH_SANDBOX_BWRAP = "bwrap"
    run = drive(run, model)
    assert (run.state, run.cause) == ("finished", "fulfilled") and run.workspace.state == WorkspaceState.ACTIVE
    assert selectors.sandbox_wait(run) == ""


def test_a_worker_without_bubblewrap_still_runs_recipes_without_a_working_copy(start, settings):
    run = start(ONE_PASS)
    settings.RYSH_SANDBOX_BWRAP = MISSING
    run = drive(run, FakeModel(task=[{"text": "Done."}]))
    assert (run.state, run.cause) == ("finished", "done")
    assert not RunEvent.objects.filter(run=run, kind="waiting").exists()


def test_a_worker_with_the_sandbox_off_takes_a_coding_run_without_bubblewrap(start_fix, settings):
    run = start_fix()
    settings.RYSH_SANDBOX_BWRAP, settings.RYSH_SANDBOX = MISSING, "off"
    run = drive(run, fixer())
    assert run.cause == "fulfilled" and not RunEvent.objects.filter(run=run, kind="waiting").exists()


def beat(sandbox: str, *, ago: int = 0) -> None:
    WorkerBeat.objects.create(
        cluster=f"c-{sandbox}-{ago}", seen=timezone.now() - timedelta(seconds=ago), sandbox=sandbox
    )


def test_the_start_is_not_refused_on_a_machine_without_bubblewrap_when_a_worker_can_sandbox(start_fix, settings):
    settings.RYSH_SANDBOX_BWRAP = MISSING  # the web's machine: the commands run on the workers
    beat("ok")
    assert start_fix().state == "queued"


def test_the_start_is_refused_when_every_worker_seen_cannot_sandbox(start_fix, settings):
    beat("unavailable")
    beat("ok", ago=settings.RYSH_READY_WORKER_SECONDS + 5)  # gone: not counted
    with pytest.raises(services.RunRefused, match="no worker can sandbox: every worker seen in the last 60s"):
        start_fix()
    assert not Run.objects.exists()
