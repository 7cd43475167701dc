"""A test command as the gate (docs/coding-loops.md): a recipe's `until_command` runs in the
sandbox, in the run's working copy, after each pass; a pass counts as done only when it exits 0
and the judge says YES. On the real anthropic SDK against the fake Messages server, and on a
scripted model for the one-pass run, a cancel during the command and a recipe without one."""

import subprocess
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from runs import services, worker
from runs.models import Control, Pass, Run, RunEvent
from runs.wiring import arm_run
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import FIX, code_repo, write_recipe  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)

GATED = """
    ---
    description: Make the failing test pass by fixing the code, never the test.
    workdir: "{workdir}"
    until_command: {command}
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
      while:
        max_iterations: 3
        prompts:
          until: the tests pass and only calc.py changed
    ---
    Make the failing test pass by fixing the code, never the test.
"""
ONE_PASS = """
    ---
    workdir: "{workdir}"
    until_command: {command}
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
    ---
    Make the failing test pass by fixing the code, never the test.
"""
UNITTEST = "python3 -m unittest"


def committed(repo, name, text, command=UNITTEST):
    path = write_recipe(repo, workdir="pkg", name=name, text=text.replace("{command}", command))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"recipe {name}")
    return path


def start(path, **options):
    return services.run_start(kind="task", name_or_path=str(path), args=[], **options)


def test_a_failing_test_command_keeps_a_pass_from_counting_as_done_though_the_judge_says_yes(fake_anthropic, code_repo):
    path = committed(code_repo, "gated", GATED)
    queue = judge_or(fake_anthropic, "YES\nThe agent says the tests pass.")
    queue += [
        {"text": "Everything already passes; nothing to change."},  # pass 1: no fix
        {"text": "fix", "tool_calls": [{"name": "edit", "input": FIX}]},  # pass 2: the fix
        {"text": "Fixed mean() in calc.py."},
    ]
    run = start(path)
    assert run.provider == "anthropic"
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "fulfilled")
    first, second = run.passes.order_by("number")
    # pass 1: the judge said YES, the command failed: NO, and the reason says both
    assert (first.gate_command, first.gate_status) == (UNITTEST, 1)
    assert first.gate_output.startswith("exit status: 1\n") and "FAILED (failures=1)" in first.gate_output
    assert first.verdict == "NO"
    assert first.reason == (f"until_command `{UNITTEST}` exited 1 (the judge said YES: The agent says the tests pass.)")
    # pass 2: fixed, the command exits 0, the judge says YES
    assert (second.gate_status, second.verdict) == (0, "YES") and "OK" in second.gate_output
    judged = [r.json for r in fake_anthropic.requests if "independent judge" in str(r.json.get("system"))]
    first_judge = judged[0]["messages"][0]["content"][0]["text"]
    assert f"<until_command>\n$ {UNITTEST}\nexit status: 1\n" in first_judge and "FAILED" in first_judge
    # the next pass was seeded with the reason
    seeded = [r.json for r in fake_anthropic.requests if "independent judge" not in str(r.json.get("system"))][1][
        "messages"
    ][0]["content"]
    assert f"until_command `{UNITTEST}` exited 1" in str(seeded)
    # events, the run page (the Passes table, the output behind an expander) and the report
    gates = list(RunEvent.objects.filter(run=run, kind="gate").values_list("message", flat=True))
    assert gates == [f"pass 1: until_command `{UNITTEST}` exited 1", f"pass 2: until_command `{UNITTEST}` exited 0"]
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    assert "<th>until_command</th>" in page
    assert '<td class="gate" id="gate-1"><details class="gate-output"><summary class="error">exit 1</summary>' in page
    assert f"$ {UNITTEST}\nexit status: 1\n" in page and "FAILED (failures=1)" in page
    assert '<summary class="ok">exit 0</summary>' in page
    report = (Path(run.output_dir) / "run-report.md").read_text()
    assert "| wrap-up | gate |" in report and "| exit status: 1 |" in report and "| exit 0 |" in report
    assert f"Pass 1: `{UNITTEST}` — exit status: 1" in report and "FAILED (failures=1)" in report


def test_a_one_pass_run_ends_unfulfilled_when_its_test_command_fails_and_done_when_it_passes(code_repo, db):
    path = committed(code_repo, "once", ONE_PASS)
    run = drive(start(path, provider="scripted"), FakeModel(task=[{"text": "Nothing to do."}]))
    assert run.cause == f"unfulfilled: until_command `{UNITTEST}` exited 1"
    assert run.passes.get().verdict == ""  # no judge without a loop
    model = FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Fixed."}])
    run = drive(start(path, provider="scripted"), model)
    assert run.cause == "done" and run.passes.get().gate_status == 0


def test_a_command_that_hangs_is_killed_at_the_command_timeout_and_the_pass_is_not_done(code_repo, settings):
    settings.RYSH_COMMAND_TIMEOUT = 1
    path = committed(code_repo, "hangs", ONE_PASS, command="sleep 30")
    started = time.monotonic()
    run = drive(start(path, provider="scripted"), FakeModel(task=[{"text": "Nothing to do."}]))
    assert time.monotonic() - started < 20
    assert run.cause == "unfulfilled: until_command `sleep 30` did not finish (killed: timed out after 1s)"
    assert run.passes.get().gate_status is None


def test_a_cancel_during_the_test_command_kills_it_and_a_continue_runs_it_again(code_repo):
    marker = "rysh-gate-cancel-marker"
    command = f"if [ -f slow ]; then (exec -a {marker} sleep 300); fi; {UNITTEST}"
    path = committed(code_repo, "slow", GATED, command=f"'{command}'")
    slow = {"text": "slow", "tools": [tool("file_write", path="slow", content="x")]}
    model = FakeModel(task=[slow, {"text": "Done."}], judge=["YES\nfine"])
    run = start(path, provider="scripted")
    asked = {}
    canceller = threading.Thread(target=_once_running, args=(run.pk, marker, asked, services.run_cancel), daemon=True)
    canceller.start()
    drive(run, model)
    paused_at = time.monotonic()
    canceller.join(5)
    run.refresh_from_db()
    assert run.state_label == "paused(cancelled)" and paused_at - asked["at"] < 2.0
    assert not _running(marker)
    first = run.passes.get()
    assert first.ended_at is not None and first.gate_command == "" and first.verdict == ""
    assert RunEvent.objects.filter(run=run, message__contains="until_command stopped (the run was cancelled)").exists()
    # the command runs again when the run goes on (the slow marker gone: it fails at once)
    (Path(run.workspace.home) / "tree/pkg/slow").unlink()
    services.run_continue(run=run)
    fixer = FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Fixed."}], judge=["YES\nfine"])
    run = drive(run, fixer)
    assert (run.cause, run.control) == ("fulfilled", Control.NONE)
    first, second = Pass.objects.filter(run=run).order_by("number")
    assert (first.gate_status, first.verdict, second.gate_status, second.verdict) == (1, "NO", 0, "YES")


def test_a_stop_during_the_test_command_kills_it_and_the_run_ends_stopped(code_repo):
    marker = "rysh-gate-stop-marker"
    path = committed(code_repo, "halts", GATED, command=f"'(exec -a {marker} sleep 300); {UNITTEST}'")
    run = start(path, provider="scripted")
    asked = {}
    stopper = threading.Thread(target=_once_running, args=(run.pk, marker, asked, services.run_stop), daemon=True)
    stopper.start()
    run = drive(run, FakeModel(task=[{"text": "Done."}], judge=["YES\nfine"]))
    stopper.join(5)
    assert (run.state, run.cause) == ("finished", "stopped by user")
    assert not _running(marker)
    assert run.passes.get().gate_command == "" and run.passes.get().verdict == ""


def test_auto_task_check_and_the_dry_run_show_the_gate_in_the_plan(code_repo, db):
    committed(code_repo, "gated", GATED)
    committed(code_repo, "once", ONE_PASS)
    out = StringIO()
    call_command("auto", "task", "check", str(code_repo / ".rysh/automations/tasks/gated.md"), stdout=out)
    assert f"gate:    `{UNITTEST}` must exit 0 after each pass, besides the judge's YES" in out.getvalue()
    lines = start(code_repo / ".rysh/automations/tasks/once.md", provider="scripted", dry_run=True).lines
    assert f"gate:    `{UNITTEST}` must exit 0 after the pass, or the run ends unfulfilled" in lines


def test_a_coding_recipe_without_a_test_command_has_no_gate(code_repo, db):
    run = drive(start(code_repo / ".rysh/automations/tasks/fix.md", provider="scripted"), FakeModel())
    assert run.cause == "fulfilled" and run.passes.get().gate_command == ""
    assert not RunEvent.objects.filter(run=run, kind="gate").exists()
    assert "until_command" not in (Path(run.output_dir) / "run-report.md").read_text()
    assert "until_command" not in client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()


def _once_running(run_id, marker, asked, control):
    from django.db import connection  # this thread's own connection, closed when it is done

    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _running(marker):
            time.sleep(0.05)
        asked["at"] = time.monotonic()
        control(run=Run.objects.get(pk=run_id))
    finally:
        connection.close()


def _running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
