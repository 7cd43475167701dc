"""The offline web demo end to end from the CLI, as `make run` has it: daphne serves the app
(and its Tiny Press pages), a qcluster runs the recipe in a real headless Chromium, a person
approves the click on Publish with `auto web approve`, and a cancelled run continues on the
same page."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runs.test_worker import ROOT, Project


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def web_project(tmp_path):
    p = Project(tmp_path)
    port = free_port()
    p.env.update({"RYSH_SITE_URL": f"http://127.0.0.1:{port}", "RYSH_PORT": str(port)})
    p.manage("migrate", "--noinput")
    p.manage("seed_demo")
    log = open(tmp_path / "daphne.log", "w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port), "rysh_site.asgi:application"],
        cwd=ROOT,
        env=p.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    p.clusters.append(server)  # stopped with the clusters
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    yield p
    p.stop_all()


def wait_for(project, code, until, timeout=90):
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = project.query(code)
        if until(value):
            return value
        time.sleep(0.3)
    raise AssertionError(f"gave up waiting; last value {value!r}")


STATE = "from runs.models import Run\nr = Run.objects.order_by('-id').first()\nprint(json.dumps([r.state, r.cause, r.pause_reason] if r else None))"


def test_it_runs_the_offline_web_demo_end_to_end_from_the_cli(web_project):
    web_project.start_cluster()
    waiting = subprocess.Popen(
        [sys.executable, "manage.py", "auto", "web", "run", "tiny-press", "--wait"],
        cwd=ROOT,
        env=web_project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_for(web_project, STATE, lambda v: v and v[0] == "awaiting approval")
    approved = web_project.manage("auto", "web", "approve", "tiny-press", "looks", "good")
    assert approved.stdout.strip() == "run #1: click(text='Publish') approved (looks good)"
    out, _ = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, out
    assert "(OFFLINE: scripted demo model, not Claude)" in out
    assert "pass 1: the task leg stopped (tokens); the wrap-up prompt takes the wheel" in out
    assert "pass 1: NO — status.md says DRAFT" in out
    assert "awaiting approval #1: click(text='Publish') ('Publish' matches click:Publish*)" in out
    assert "approval #1 approved: looks good" in out
    assert "pass 2: YES" in out and "run #1 finished: fulfilled" in out
    data = Path(web_project.env["RYSH_DATA_DIR"])
    status = (data / "results/webs/tiny-press/results/status.md").read_text()
    assert status.startswith("PUBLISHED")
    assert len(list((data / "screenshots/1").glob("*.jpg"))) >= 10
    assert oct((data / "profiles/tiny-press").stat().st_mode & 0o777) == "0o700"


SLOW_WEB = """\
# long enough (13 calls of 0.5 s) that a cancel from another process lands mid-run
latency_seconds: 0.5
passes:
  - task:
      - text: go to the form
        tool_calls: [{name: navigate, input: {url: /demo-site/stories/}}]
      - text: look
        tool_calls: [{name: read_page, input: {mode: accessibility}}]
      - text: look down
        tool_calls: [{name: scroll, input: {direction: down}}]
      - text: read
        tool_calls: [{name: read_page, input: {mode: text}}]
      - text: look up
        tool_calls: [{name: scroll, input: {direction: up}}]
      - text: look
        tool_calls: [{name: read_page, input: {mode: accessibility}}]
      - text: look down
        tool_calls: [{name: scroll, input: {direction: down}}]
      - text: read
        tool_calls: [{name: read_page, input: {mode: text}}]
      - text: look up
        tool_calls: [{name: scroll, input: {direction: up}}]
      - text: look
        tool_calls: [{name: read_page, input: {mode: accessibility}}]
      - text: look down
        tool_calls: [{name: scroll, input: {direction: down}}]
      - text: read
        tool_calls: [{name: read_page, input: {mode: text}}]
      - text: look up
        tool_calls: [{name: scroll, input: {direction: up}}]
      - text: Done.
    judge: "YES\\nfine"
"""


def test_a_cancelled_web_run_continues_on_the_same_page(web_project):
    repo = Path(web_project.env["RYSH_DATA_DIR"]) / "demo-recipes/.rysh/automations/webs"
    (repo / "wander.md").write_text("---\nurl: /demo-site/\nweb_profile: wander\n---\nWander.\n")
    (repo / "wander.script.yaml").write_text(SLOW_WEB)
    web_project.start_cluster()
    web_project.manage("auto", "web", "run", str(repo / "wander.md"))
    steps = "from runs.models import Step\nprint(json.dumps(list(Step.objects.filter(status='done').order_by('id').values_list('page_url', flat=True))))"
    wait_for(web_project, steps, lambda v: len(v) >= 2)
    web_project.manage("auto", "web", "cancel", "wander")
    wait_for(web_project, STATE, lambda v: v[0] == "paused")
    before = web_project.query(steps)
    assert before[-1].endswith("/demo-site/stories/")
    out = web_project.manage("auto", "web", "continue", "wander", "--wait", check=False).stdout
    assert "run #1 finished: done" in out, out
    opened = web_project.query(
        "from runs.models import RunEvent\nprint(json.dumps([e.message for e in RunEvent.objects.filter(kind='note')]))"
    )
    assert any("/demo-site/stories/" in m for m in opened), opened
