"""Real workers: the demo end to end from the CLI, and a qcluster killed mid-pass.

Everything runs in subprocesses against an on-disk database, as `make run` does. The same
tests run again on PostgreSQL with the Redis broker (scripts/scaleout_tests.py).
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Project:
    def __init__(self, tmp_path: Path):
        self.env = {
            **os.environ,
            "RYSH_DATA_DIR": str(tmp_path / "data"),
            "RYSH_WORKER_LOST_SECONDS": "10",
            "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("ANTHROPIC_API_KEY", None)
        if os.environ.get("RYSH_WORKER_TEST_REDIS_URL"):
            self.env["REDIS_URL"] = os.environ["RYSH_WORKER_TEST_REDIS_URL"]
        self.database = None
        if os.environ.get("RYSH_WORKER_TEST_POSTGRES"):  # a fresh database per test
            import psycopg

            base = os.environ["RYSH_WORKER_TEST_POSTGRES"]
            self.database = f"rysh_worker_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.database}"')
            self.env["DATABASE_URL"] = base.rsplit("/", 1)[0] + f"/{self.database}"
        else:
            self.env.pop("DATABASE_URL", None)
            self.env.pop("REDIS_URL", None)
        self.clusters = []
        self.tmp = tmp_path

    def manage(self, *args, timeout=180, check=True):
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def query(self, code: str):
        script = "import django, json\ndjango.setup()\n" + textwrap.dedent(code)
        out = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    def start_cluster(self):
        log = open(self.tmp / f"qcluster-{len(self.clusters)}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.clusters.append(proc)
        return proc

    def kill(self, proc):
        os.killpg(proc.pid, signal.SIGKILL)  # the whole cluster: guard, workers, pusher
        proc.wait(timeout=10)

    def stop_all(self):
        for proc in self.clusters:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        if self.database:
            import psycopg

            with psycopg.connect(os.environ["RYSH_WORKER_TEST_POSTGRES"], autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


@pytest.fixture
def project(tmp_path):
    p = Project(tmp_path)
    p.manage("migrate", "--noinput")
    p.manage("seed_demo")
    yield p
    p.stop_all()


def test_it_runs_the_offline_demo_end_to_end_from_the_cli(project):
    project.start_cluster()
    result = project.manage("auto", "task", "run", "reading-list", "unattended agents", "--wait", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(OFFLINE: scripted demo model, not Claude)" in result.stdout
    assert "pass 1: NO — The list has only three entries and is labelled PARTIAL." in result.stdout
    assert "run #1 finished: fulfilled" in result.stdout
    out = Path(project.env["RYSH_DATA_DIR"]) / "results/tasks/reading-list/results"
    assert "PARTIAL" not in (out / "reading-list.md").read_text()
    report = (out / "run-report.md").read_text()
    assert "| 1 | NO |" in report and "| 2 | YES |" in report and "OFFLINE SCRIPTED MODEL" in report
    history = project.manage("auto", "task", "history").stdout
    assert "reading-list" in history and "fulfilled [scripted]" in history


SLOW = """\
latency_seconds: 1
passes:
  - task:
      - text: step
        tool_calls:
          - name: save_result
            input: {filename: notes.md, content: "saved before the crash"}
      - text: again
        tool_calls: [{name: list_results, input: {}}]
      - text: again
        tool_calls: [{name: list_results, input: {}}]
      - text: again
        tool_calls: [{name: list_results, input: {}}]
      - text: Done.
    judge: "YES\\nfine"
"""


def test_it_survives_a_worker_killed_mid_pass(project):
    repo = Path(project.env["RYSH_DATA_DIR"]) / "demo-recipes/.rysh/automations/tasks"
    (repo / "slow.md").write_text("---\nloop:\n  while:\n    prompts:\n      until: notes saved\n---\nTake notes.\n")
    (repo / "slow.script.yaml").write_text(SLOW)
    cluster = project.start_cluster()
    project.manage("auto", "task", "run", str(repo / "slow.md"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = project.query(
            "from runs.models import Step\nprint(json.dumps(Step.objects.filter(status='done').count()))"
        )
        if done >= 2:
            break
        time.sleep(0.3)
    assert done >= 2, "the worker never got going"
    project.kill(cluster)
    before = project.query("""
        from runs.models import Run
        r = Run.objects.get()
        print(json.dumps([r.state, r.tokens_counted]))""")
    assert before[0] == "running"  # nobody has noticed yet: the heartbeat just stops

    time.sleep(11)  # RYSH_WORKER_LOST_SECONDS=10
    swept = project.manage("sweep_runs").stdout
    assert "worker lost; continued from its checkpoint" in swept
    project.start_cluster()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = project.query("from runs.models import Run\nr=Run.objects.get()\nprint(json.dumps([r.state, r.cause]))")
        if state[0] == "finished":
            break
        time.sleep(0.5)
    assert state == ["finished", "fulfilled"]
    after = project.query("""
        from django.db.models import Count, Sum
        from runs.models import Run, Step
        from runs.models import LedgerEntry
        r = Run.objects.get()
        ledger = LedgerEntry.objects.filter(run=r)
        print(json.dumps({
            "counted": r.tokens_counted,
            "ledger": ledger.aggregate(s=Sum("counted_tokens"))["s"],
            "per_step_max": max(ledger.values("step").annotate(n=Count("id")).values_list("n", flat=True)),
            "lost": Step.objects.filter(status="lost").count(),
            "pending": Step.objects.filter(status="pending").count(),
            "lost_count": r.lost_count}))""")
    assert after["counted"] == after["ledger"]  # nothing lost, nothing counted twice
    assert after["per_step_max"] == 1
    assert after["pending"] == 0 and after["lost_count"] == 1
    assert after["lost"] <= 1  # at most the call that was in flight, counted at its reservation
    notes = Path(project.env["RYSH_DATA_DIR"]) / "results/tasks/slow/results/notes.md"
    assert notes.read_text() == "saved before the crash"
