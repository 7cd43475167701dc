"""/healthz and /readyz (docs: Operating it): the liveness probe reads nothing, the readiness probe
names each check with a fixed word, and a real qcluster turns a fresh install ready when it starts
and not ready when it stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.conf import Conf
from django_q.signing import SignedPackage

from agents.sandbox import sandbox_problem
from ops import health
from runs.models import WorkerBeat
from tests.e2e.stack import Stack


class Stat:
    """What the beat reads of django-q2's cluster stats."""

    def __init__(self, status):
        self.cluster_id, self.status = "abc", status


ALL_OK = {"database": "ok", "migrations": "ok", "workers": "ok", "sandbox": "ok", "broker": "ok", "recipes": "ok"}


@pytest.fixture
def recipes(tmp_path, settings):
    """A readable recipes repository with a main branch."""
    repo = tmp_path / "recipes"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    settings.RYSH_RECIPES_REPO = str(repo)
    settings.RYSH_RECIPES_BRANCH = "main"
    return repo


@pytest.fixture(autouse=True)
def _fresh_migration_check():
    health.forget_migrations()
    yield
    health.forget_migrations()


def test_healthz_answers_without_touching_the_database(client, django_db_blocker):
    with django_db_blocker.block():  # any query would raise
        answer = client.get("/healthz")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    assert "no-cache" in answer["Cache-Control"] or "max-age=0" in answer["Cache-Control"]


@pytest.mark.django_db
def test_healthz_makes_no_query(client):
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/healthz").status_code == 200
    assert len(queries) == 0


@pytest.mark.django_db
def test_ready_with_a_recent_heartbeat(client, recipes):
    WorkerBeat.objects.create(cluster="c1", seen=timezone.now())
    answer = client.get("/readyz")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"status": "ready", "checks": ALL_OK}


@pytest.mark.django_db
def test_not_ready_without_a_heartbeat_or_with_a_stale_one(client, recipes, settings):
    settings.RYSH_READY_WORKER_SECONDS = 30
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json() == {"status": "not ready", "checks": {**ALL_OK, "workers": "none"}}
    WorkerBeat.objects.create(cluster="c1", seen=timezone.now() - timedelta(seconds=31))
    assert client.get("/readyz").json()["checks"]["workers"] == "none"


@pytest.mark.django_db
def test_not_ready_with_unapplied_migrations(client, recipes, monkeypatch):
    WorkerBeat.objects.create(cluster="c1", seen=timezone.now())
    monkeypatch.setattr(health.MigrationExecutor, "migration_plan", lambda self, targets: [("a migration", False)])
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"] == {**ALL_OK, "migrations": "unapplied"}


@pytest.mark.django_db
def test_not_ready_with_an_unreadable_recipes_repository(client, recipes, settings, tmp_path):
    WorkerBeat.objects.create(cluster="c1", seen=timezone.now())
    settings.RYSH_RECIPES_REPO = str(tmp_path / "secret-place" / "nowhere")
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"] == {**ALL_OK, "recipes": "unreadable"}
    assert b"secret-place" not in answer.content  # no path, no exception text
    settings.RYSH_RECIPES_REPO = str(recipes)
    settings.RYSH_RECIPES_BRANCH = "no-such-branch"
    assert client.get("/readyz").json()["checks"]["recipes"] == "unreadable"


@pytest.mark.django_db
def test_a_hung_check_times_out_quickly(client, recipes, monkeypatch):
    WorkerBeat.objects.create(cluster="c1", seen=timezone.now())
    monkeypatch.setattr(health, "CHECK_SECONDS", 0.3)
    monkeypatch.setattr(health, "_read_recipes", lambda: time.sleep(5) or "ok")
    started = time.monotonic()
    answer = client.get("/readyz")
    assert time.monotonic() - started < 2
    assert answer.json()["checks"]["recipes"] == "timeout"


@pytest.mark.django_db
def test_a_broken_database_is_named_not_described(client, recipes, monkeypatch):
    def refuse(*a, **k):
        raise RuntimeError("could not connect to postgres://admin:hunter2@db.internal/rysh")

    monkeypatch.setattr(connections["default"], "cursor", refuse)
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"] == {
        "database": "unreachable",
        "migrations": "skipped",
        "workers": "skipped",
        "sandbox": "skipped",
        "broker": "skipped",
        "recipes": "ok",
    }
    assert b"hunter2" not in answer.content and b"db.internal" not in answer.content


@pytest.mark.django_db
def test_the_heartbeat_is_throttled_and_removed_on_a_clean_stop(settings):
    settings.RYSH_READY_WORKER_SECONDS = 40  # a beat every 10 s
    health._last_beat.clear()
    health.beat("k", SignedPackage.dumps(Stat(Conf.STARTING), True))
    assert not WorkerBeat.objects.exists()  # not yet guarding
    health.beat("k", SignedPackage.dumps(Stat(Conf.IDLE), True))
    first = WorkerBeat.objects.get(cluster="abc").seen
    health.beat("k", SignedPackage.dumps(Stat(Conf.WORKING), True))
    assert WorkerBeat.objects.get(cluster="abc").seen == first  # within the interval: no write
    health.beat("k", SignedPackage.dumps(Stat(Conf.STOPPING), True))
    assert not WorkerBeat.objects.exists()
    health.beat("k", "not a signed package")  # never raises into the cluster


@pytest.mark.django_db
@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_worker_that_cannot_sandbox_is_not_ready_unless_the_sandbox_is_off(client, recipes, settings, sandbox):
    settings.RYSH_SANDBOX_BWRAP = "/nonexistent/bwrap/at/a/secret/place"  # this worker has no bubblewrap
    settings.RYSH_SANDBOX = sandbox
    health._last_beat.clear()
    sandbox_problem.cache_clear()
    health.beat("k", SignedPackage.dumps(Stat(Conf.IDLE), True))  # its cluster's heartbeat, as its broker writes it
    assert WorkerBeat.objects.get(cluster="abc").sandbox == ("unavailable" if sandbox == "on" else "off")
    answer = client.get("/readyz")
    if sandbox == "off":  # an admin chose unsandboxed commands: nothing stands in the way
        assert (answer.status_code, answer.json()) == (200, {"status": "ready", "checks": ALL_OK})
        return
    assert answer.status_code == 503
    assert answer.json() == {"status": "not ready", "checks": {**ALL_OK, "sandbox": "unavailable"}}
    assert b"secret" not in answer.content  # a fixed word, never the probe's text
    WorkerBeat.objects.filter(cluster="abc").update(seen=timezone.now() - timedelta(hours=1))
    assert client.get("/readyz").json()["checks"]["sandbox"] == "ok"  # a worker gone is not counted


def _readyz(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as answer:
        return answer.code, json.loads(answer.read())


def _wait_for(port: int, status: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        code, body = _readyz(port)
        if code == status or time.monotonic() > deadline:
            assert code == status, body
            return body
        time.sleep(0.25)


def test_a_fresh_install_is_ready_while_its_worker_runs():
    """The issue's "done when": daphne and a real qcluster on a fresh data dir; killed outright, the
    cluster is missed after RYSH_READY_WORKER_SECONDS; stopped cleanly, at once."""
    stack = Stack(workers=1, extra_env={"RYSH_READY_WORKER_SECONDS": "3"})
    try:
        stack.setup()
        stack.start_web()
        assert _wait_for(stack.port, 503, 5)["checks"] == {**ALL_OK, "workers": "none"}

        stack.start_worker()
        assert _wait_for(stack.port, 200, 20) == {"status": "ready", "checks": ALL_OK}

        cluster = stack.procs.pop("qcluster")
        os.killpg(cluster.pid, signal.SIGKILL)  # no clean stop: the row goes stale
        cluster.wait(timeout=10)
        killed = time.monotonic()
        assert _wait_for(stack.port, 503, 10)["checks"]["workers"] == "none"
        assert time.monotonic() - killed >= 1.5  # ready until the window ran out (beat ≤ 0.75 s old)

        stack.start_worker()
        _wait_for(stack.port, 200, 20)
        stopped = time.monotonic()
        stack.stop_process("qcluster")  # SIGTERM: a clean stop deletes the row
        assert _wait_for(stack.port, 503, 10)["checks"]["workers"] == "none"
        assert time.monotonic() - stopped < 3
    finally:
        stack.stop()


def test_a_real_worker_without_bubblewrap_leaves_a_coding_run_queued_and_is_not_ready():
    """daphne and a real qcluster whose machine has no bubblewrap: /readyz names the sandbox, the
    offline coding demo's run waits queued and says why; a worker that can then runs it."""
    stack = Stack(workers=1, extra_env={"RYSH_READY_WORKER_SECONDS": "3"})
    try:
        stack.setup()
        stack.start_web()
        pk = stack.run("fix-the-test")  # no worker seen yet: this machine's own bubblewrap decides
        stack.env["RYSH_SANDBOX_BWRAP"] = "/nonexistent/bwrap"
        stack.start_worker()
        del stack.env["RYSH_SANDBOX_BWRAP"]
        checks = _wait_until(stack.port, lambda body: body["checks"]["workers"] == "ok", 20)["checks"]
        assert checks == {**ALL_OK, "sandbox": "unavailable"}
        waiting = stack.query(f"""
            from runs.models import Run
            run = Run.objects.get(pk={pk})
            print(json.dumps([run.state, list(run.events.filter(kind="waiting").values_list("message", flat=True))]))""")
        assert waiting[0] == "queued" and len(waiting[1]) == 1
        assert waiting[1][0].startswith("waiting for a worker that can sandbox: this worker (")
        stack.stop_process("qcluster")
        stack.start_worker()
        _wait_for(stack.port, 200, 20)
        stack.query("""
            from datetime import timedelta
            from django.utils import timezone
            from runs.worker import requeue_stranded_runs
            print(json.dumps(requeue_stranded_runs(now=timezone.now() + timedelta(minutes=5))))""")
        row = stack.wait_run(pk, lambda r: r["state"] == "finished", timeout=90)
        assert row["cause"] == "fulfilled", row
    finally:
        stack.stop()


def _wait_until(port: int, predicate, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        _, body = _readyz(port)
        if predicate(body) or time.monotonic() > deadline:
            assert predicate(body), body
            return body
        time.sleep(0.25)
