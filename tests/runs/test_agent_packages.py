"""An agent package run end to end (docs/packages.md): `auto agent run test-fixer "make the tests
pass"` on the real anthropic SDK against the fake Messages server runs the agent in its own
working copy; the model's edit fixes the code, and the copy's tests pass afterwards."""

import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from runs import worker
from runs.models import Run
from runs.wiring import arm_run
from tests.catalogue.packages_repo import FIXTURE, packages_repo  # noqa: F401 (fixture)
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import CALC, FIX
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db(transaction=True)

SKILL = (FIXTURE / "SKILL.md").read_text()
TESTS = "cd pkg && python3 -m unittest 2>&1 | tail -n 1"


def bash(command):
    return {"text": f"$ {command}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def agent_run(*words, **options) -> Run:
    out = StringIO()
    call_command("auto", "agent", "run", *words, stdout=out, **options)
    run = Run.objects.latest("id")
    assert f"run #{run.pk} queued: code/agent-test-fixer on claude-sonnet-5-5" in out.getvalue()
    assert "package: @team/test-fixer@0.2.0" in out.getvalue()
    return run


def test_auto_agent_run_fixes_the_failing_test_in_its_own_copy(fake_anthropic, packages_repo):
    queue = judge_or(fake_anthropic, "YES\nnot asked")
    queue += [
        bash("cd pkg && python3 -m unittest"),
        {"text": "fix", "tool_calls": [{"name": "edit", "input": {**FIX, "path": "pkg/calc.py"}}]},
        bash(TESTS),
        {"text": "Fixed mean() in pkg/calc.py: it divided by one less than the count. The suite is green."},
    ]
    run = agent_run("test-fixer", "make the tests pass", budget="2b")
    assert (run.kind, run.package, run.package_version.package.name) == ("code", "@team/test-fixer@0.2.0", "test-fixer")
    assert run.provider == "anthropic" and run.plan["passes"] == 1
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "done")
    # what the model was sent: the agent's instructions first, the person's prompt after them
    bodies = [r.json for r in fake_anthropic.requests if r.path.endswith("/messages")]
    first = next(body for body in bodies if "independent judge" not in str(body.get("system")))
    prompt = first["messages"][0]["content"]
    prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
    assert prompt.startswith("You make failing tests pass.") and prompt.endswith("## The task\n\nmake the tests pass")
    assert first["model"] == "claude-sonnet-5-5"
    # the coding tools it declares, and not the one it does not (file_write); the results tools stay
    offered = {tool["name"] for tool in first["tools"]}
    assert {"bash", "file_read", "edit", "grep", "glob", "save_result"} <= offered and "file_write" not in offered
    outputs = [r["content"] for s in run.passes.get().steps.order_by("number") for r in s.tool_results]
    assert "FAILED (failures=1)" in outputs[0]
    assert "OK" in outputs[2]
    # the copy's tests pass afterwards (the project's own test command, run in the copy), and
    # the repository's checkout is untouched
    copy = Path(Workspace.objects.get(run=run).home) / "tree"
    assert (copy / "pkg/calc.py").read_text() != CALC
    done = subprocess.run(["python3", "-m", "unittest"], cwd=copy / "pkg", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (packages_repo.path / "pkg/calc.py").read_text() == CALC
    # labelled with its package on its page and in the run list
    viewer = client_for(user_with("viewer"))
    page = viewer.get(f"/runs/{run.pk}/").content.decode()
    assert 'title="agent package">@team/test-fixer@0.2.0</span>' in page
    assert 'title="agent package">@team/test-fixer@0.2.0</span>' in viewer.get("/history/").content.decode()
    assert f'href="/runs/{run.pk}/"' in viewer.get("/packages/test-fixer/").content.decode()


def test_the_run_form_starts_the_agent_with_the_prompt_and_budget(fake_anthropic, packages_repo):
    operator = client_for(user_with("operator"))
    answer = operator.post("/packages/test-fixer/run/", {"prompt": "make the tests pass", "budget": "3b"})
    run = Run.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/runs/{run.pk}/"
    assert run.overrides == {"budget": "3b"} and run.plan["passes"] == 1
    assert run.recipe_text.endswith("## The task\n\nmake the tests pass\n")
    refused = operator.post("/packages/test-fixer/run/", {"prompt": "again", "budget": "lots"})
    assert refused.status_code == 400 and "--budget" in refused.content.decode()
    viewer = client_for(user_with("viewer"))
    assert viewer.post("/packages/test-fixer/run/", {"prompt": "x"}).status_code == 403


def test_until_makes_the_agent_a_loop_and_auto_approve_false_gates_its_tools(fake_anthropic, packages_repo):
    packages_repo.commit("gate every call", {"SKILL.md": SKILL.replace("auto_approve: true", "auto_approve: false")})
    run = agent_run("test-fixer", "make the tests pass", fork_until="the tests pass")
    spec, _ = __import__("runs.arming", fromlist=["arm"]).arm(
        run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=run.overrides
    )
    assert spec.loop_while.runs_loop and spec.loop_while.until == "the tests pass"
    assert spec.approve == () and spec.do.auto_approve is False


def test_a_broken_newest_version_runs_the_last_good_one_and_says_so(fake_anthropic, packages_repo):
    packages_repo.commit("broken", {"SKILL.md": SKILL.replace("model: claude-sonnet-5-5", "model: gpt-9")})
    run = agent_run("test-fixer", "make the tests pass")
    assert "claude-sonnet-5-5" == run.executor_model
    notes = list(run.events.values_list("message", flat=True))
    assert any("is broken; running the last good version" in note for note in notes)


def test_it_refuses_an_unknown_package_and_a_missing_prompt(packages_repo):
    with pytest.raises(CommandError, match="no package named 'nope'"):
        call_command("auto", "agent", "run", "nope", "x")
    with pytest.raises(CommandError, match="an agent runs with a prompt"):
        call_command("auto", "agent", "run", "test-fixer")
    assert not Run.objects.exists()


LOOP_MANIFEST = """name: "@team/tiny-loop"
version: "1.0.0"
type: loop
entry: SKILL.md
declares_tools: [bash, edit]
"""
LOOP_ENTRY = """---
description: Implement a goal, test, repeat until green.
args: [goal]
workdir: "."
loop:
  while:
    max_iterations: 2
    prompts:
      until: "{{goal}} is done and the tests pass"
---
Work toward: {{goal}}
"""


def test_a_loop_package_runs_as_the_recipe_it_is_with_its_arguments(fake_anthropic, packages_repo):
    folder = packages_repo.path / ".rysh/packages/tiny-loop"
    folder.mkdir()
    (folder / "rysh.pkg.yaml").write_text(LOOP_MANIFEST)
    (folder / "SKILL.md").write_text(LOOP_ENTRY)
    packages_repo.commit("a loop package")
    out = StringIO()
    call_command("auto", "agent", "run", "tiny-loop", "fix the mean", stdout=out)
    run = Run.objects.get()
    assert (run.target, run.args, run.package) == ("code/tiny-loop", ["fix the mean"], "@team/tiny-loop@1.0.0")
    assert run.plan["passes"] == 2 and run.recipe_text == LOOP_ENTRY
