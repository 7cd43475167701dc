"""A coding loop's whole story on the real anthropic SDK against the fake Messages server: a
rysh-style coding recipe (`workdir: "."`, a failing test, "repeat until green") runs
unattended to `fulfilled`; its fix is in `auto task diff` and on the run page; the repository's
own checkout is untouched; every escape from inside a command fails; a cancel during a long
command pauses the run within 2 s with nothing left running."""

import subprocess
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from runs import services, worker
from runs.models import Control, Run
from runs.wiring import arm_run
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import CALC, FIX, code_repo, write_recipe  # noqa: F401 (fixture)
from workspaces.models import installation_key

pytestmark = pytest.mark.django_db(transaction=True)

RYSH_STYLE = """
    ---
    description: Make the failing test pass by fixing the code, never the test.
    workdir: "{workdir}"
    loop:
      do:
        max_iterations: 30
        budget:
          size: 1b
      while:
        max_iterations: 3
        prompts:
          until: test-output.txt ends with OK and the diff stat shows pkg/calc.py changed, no test file.
          iterate_with: Not green yet. Run the tests, read the failure, fix the code, never the test.
    ---
    Implement, test, vet; repeat until green. The tests run with `cd pkg && python3 -m unittest`.
"""


def bash(command):
    return {"text": f"$ {command}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def serve(fake, turns, verdict="YES\ntest-output.txt ends with OK; only pkg/calc.py changed."):
    queue = judge_or(fake, verdict)
    queue += turns
    return queue


@pytest.fixture
def rysh_recipe(code_repo):
    path = write_recipe(code_repo, workdir=".", name="green", text=RYSH_STYLE)
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "a rysh-style coding recipe")
    return path


def outputs(run):
    return [r["content"] for s in run.passes.get().steps.order_by("number") for r in s.tool_results]


def test_a_rysh_coding_recipe_runs_green_unattended_and_nothing_escapes(fake_anthropic, rysh_recipe, code_repo):
    secret = Path(settings.DATA_DIR) / "secret_key"
    host, port = fake_anthropic.base_url.removeprefix("http://").split(":")
    probe = "import socket,sys; s=socket.socket(); s.settimeout(2); s.connect((sys.argv[1], int(sys.argv[2])))"
    serve(
        fake_anthropic,
        [
            bash("cd pkg && python3 -m unittest"),
            # escapes, each of which must fail
            bash(f"echo pwned > {code_repo}/pkg/calc.py; echo pwned > {settings.DATA_DIR}/pwned; cat {secret}"),
            bash("env; cat /proc/1/environ | tr '\\0' '\\n'"),
            bash(f"python3 -c '{probe}' {host} {port}"),
            bash(f"python3 -c '{probe}' 127.0.0.1 5432"),
            bash("ls /run; ls /var/run/postgresql"),
            bash(
                f"cat {settings.BASE_DIR}/manage.py {settings.BASE_DIR}/rysh_site/settings.py; ls -A {settings.BASE_DIR}"
            ),
            {"text": "fix", "tool_calls": [{"name": "edit", "input": {**FIX, "path": "pkg/calc.py"}}]},
            {"text": "no", "tool_calls": [{"name": "file_write", "input": {"path": "../outside.txt", "content": "x"}}]},
            bash("cd pkg && python3 -m unittest 2>&1 | tail -n 1"),
            {
                "text": "saving",
                "tool_calls": [{"name": "save_result", "input": {"filename": "test-output.txt", "content": "OK"}}],
            },
            {"text": "Fixed mean() in pkg/calc.py; the suite is green."},
        ],
    )
    run = services.run_start(kind="task", name_or_path=str(rysh_recipe), args=[])
    assert run.provider == "anthropic"
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "fulfilled")
    said = outputs(run)
    assert "FAILED (failures=1)" in said[0]
    # writing outside the copy: the repository's file and the data folder stay as they were
    assert (code_repo / "pkg/calc.py").read_text() == CALC
    assert not (Path(settings.DATA_DIR) / "pwned").exists()
    assert secret.read_text() not in said[1]
    # the worker's secrets are not in a command's environment
    assert "ANTHROPIC" not in said[2] and "RYSH_" not in said[2] and "sk-ant" not in said[2]
    # no socket to the dashboard's model endpoint or to the database
    assert "exit status: 1" in said[3] and ("refused" in said[3] or "unreachable" in said[3])
    assert "exit status: 1" in said[4]
    assert "postgresql" not in said[5].split("exit status")[1] or "No such file" in said[5]
    # nor the dashboard's own folder (its .env, settings, .data)
    assert said[6].count("No such file or directory") == 2 and "<stdout>" not in said[6]  # `ls -A`: empty
    assert "outside the working copy" in said[8]
    assert said[9].startswith("exit status: 0") and "\nOK\n" in said[9]
    # the repository's own checkout is untouched, and it has no new branch until someone keeps
    assert git(code_repo, "status", "--porcelain") == ""
    assert git(code_repo, "branch", "--list", "rysh/*") == ""
    # the fix in `auto task diff`
    out = StringIO()
    call_command("auto", "task", "diff", "green", stdout=out)
    diff = out.getvalue()
    assert diff.startswith("diff --git a/pkg/calc.py b/pkg/calc.py")
    assert "+    return sum(values) / len(values)" in diff and "test_calc" not in diff
    # and on the run page
    viewer = client_for(user_with("viewer"))
    page = viewer.get(f"/runs/{run.pk}/").content.decode()
    assert "pkg/calc.py" in page and "+1" in page and f"rysh/green/{installation_key()}-run-{run.pk}" in page
    diff_page = viewer.get(f"/runs/{run.pk}/changes/").content.decode()
    assert "return sum(values) / len(values)" in diff_page and 'class="d-add"' in diff_page


def test_a_cancel_during_a_long_command_pauses_within_two_seconds_with_nothing_left(fake_anthropic, rysh_recipe):
    marker = "rysh-cancel-marker-21"
    serve(fake_anthropic, [bash(f"(exec -a {marker} sleep 300) & exec -a {marker}-fg sleep 300")])
    run = services.run_start(kind="task", name_or_path=str(rysh_recipe), args=[])
    asked = {}

    def cancel_once_the_command_runs():
        from django.db import connection

        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not _running(marker):
                time.sleep(0.05)
            asked["at"] = time.monotonic()
            services.run_cancel(run=Run.objects.get(pk=run.pk))
        finally:
            connection.close()

    canceller = threading.Thread(target=cancel_once_the_command_runs, daemon=True)
    canceller.start()
    worker.execute(run.pk, arm_run)
    paused_at = time.monotonic()
    canceller.join(5)
    run.refresh_from_db()
    assert run.state_label == "paused(cancelled)"
    assert paused_at - asked["at"] < 2.0
    assert not _running(marker)
    result = run.passes.get().steps.get(number=1).tool_results[0]
    assert result["is_error"] and "the run was cancelled" in result["content"]
    assert run.control == Control.NONE


def _running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
