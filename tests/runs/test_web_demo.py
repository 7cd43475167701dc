"""The offline web demo, in this process: the scripted model drives a real headless Chromium
against the Tiny Press pages this app serves (live_server), through a takeover landing, a NO,
an approval and a YES. The same demo from the CLI with real processes is in test_web_worker.py."""

import threading
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from runs import services, worker
from runs.models import Approval, ApprovalState, Pass, RunState, Step
from runs.wiring import arm_run

DEMO = Path(django_settings.BASE_DIR) / "demo/recipes/.rysh/automations/webs/tiny-press.md"


@pytest.fixture
def web_env(settings, tmp_path, live_server):
    settings.RYSH_SITE_URL = live_server.url
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    settings.RYSH_RECIPES_REPO = str(tmp_path / "repo")
    settings.RYSH_PROFILES_DIR = tmp_path / "profiles"
    settings.RYSH_SCREENSHOTS_DIR = tmp_path / "shots"
    settings.RYSH_VIDEOS_DIR = tmp_path / "videos"
    return tmp_path


class Approver(threading.Thread):
    """A person at the dashboard: answers each approval as it appears."""

    def __init__(self, answers):
        super().__init__(daemon=True)
        self.answers = list(answers)
        self.seen = []
        self.done = threading.Event()

    def run(self):
        from django.db import connection

        try:
            while self.answers and not self.done.is_set():
                pending = Approval.objects.filter(state=ApprovalState.PENDING).first()
                if pending is None:
                    time.sleep(0.1)
                    continue
                approved, reason = self.answers.pop(0)
                self.seen.append((pending.run.state, pending.tool_name, pending.subject))
                services.approval_answer(approval=pending, user=None, approved=approved, reason=reason)
        finally:
            connection.close()


def fast(script_path: Path, tmp_path: Path) -> Path:
    """The demo's script without its watchable latency."""
    text = script_path.read_text().replace("latency_seconds: 0.3", "latency_seconds: 0")
    copy = tmp_path / "tiny-press.script.yaml"
    copy.write_text(text)
    return copy


@pytest.mark.django_db(transaction=True)
def test_it_runs_the_offline_web_demo_through_a_landing_a_no_an_approval_and_a_yes(web_env):
    run = services.run_start(kind="web", name_or_path=str(DEMO), args=[], provider="scripted")
    run.script_path = str(fast(Path(run.script_path), web_env))
    run.save(update_fields=["script_path"])
    approver = Approver([(True, "")])
    approver.start()
    try:
        worker.execute(run.pk, arm_run)
    finally:
        approver.done.set()
        approver.join(5)
    run.refresh_from_db()
    assert (run.state, run.cause) == (RunState.FINISHED, "fulfilled"), run.cause
    first, second = Pass.objects.filter(run=run).order_by("number")
    assert (first.task_stop, first.takeover_used, first.verdict) == ("tokens", True, "NO")
    assert second.verdict == "YES" and not second.takeover_used
    # the start page was open before the first step
    step1 = Step.objects.get(run_pass=first, number=1)
    assert "Title: New story · Tiny Press" in step1.tool_results[0]["content"]
    # loop detection refused the 4th identical read of the page
    refusals = [r["content"] for s in first.steps.all() for r in s.tool_results if r["content"].startswith("refused")]
    assert refusals and "this exact call (read_page with the same input) is already 3" in refusals[0]
    # the click on Publish waited in `awaiting approval` and was approved
    approval = Approval.objects.get(run=run)
    assert (approval.state, approval.tool_name, approval.pattern, approval.subject) == (
        ApprovalState.APPROVED,
        "click",
        "click:Publish*",
        "Publish",
    )
    assert approver.seen == [(RunState.AWAITING_APPROVAL, "click", "Publish")]
    status = (Path(run.output_dir) / "status.md").read_text()
    assert status.startswith("PUBLISHED")
    published = Step.objects.get(run_pass=second, number=4)
    assert "/demo-site/p/1/" in published.page_url and "PUBLISHED ·" in published.tool_results[0]["content"]
    # a small JPEG per web step for the filmstrip
    shots = [s.screenshot for s in Step.objects.filter(run_pass__run=run).exclude(leg="judging")]
    assert shots and all(shots)
    assert (Path(django_settings.RYSH_SCREENSHOTS_DIR) / shots[0]).read_bytes()[:2] == b"\xff\xd8"
