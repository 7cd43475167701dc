"""What a finished run did, read for grading (evals/evidence.py): a real coding run on the real
anthropic SDK against the fake Messages server, in a real working copy; and rows written as the
engine writes them for the cases a run cannot easily be made to produce."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db.models import Sum

from evals.evidence import RESULT_CAP_BYTES, evidence_of
from evals.format import Expect
from evals.grading import grade
from runs import services, worker
from runs.models import LedgerEntry, Pass, Run, Step, StepStatus
from runs.wiring import arm_run
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.recipes_git import git
from tests.workspaces.conftest import FIX, code_repo, write_recipe  # noqa: F401 (fixture)
from workspaces.models import Workspace, WorkspaceState

RECIPE = """
    ---
    workdir: "{workdir}"
    loop:
      do:
        max_iterations: 30
        budget:
          size: 1b
      while:
        max_iterations: 1
        prompts:
          until: the tests pass
    ---
    Make the failing test pass by fixing the code, never the test.
"""


def bash(command):
    return {"text": f"$ {command}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}


@pytest.mark.django_db(transaction=True)
def test_it_reads_what_a_real_coding_run_did(fake_anthropic, code_repo):
    path = write_recipe(code_repo, workdir=".", name="green", text=RECIPE)
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "a coding recipe")
    queue = judge_or(fake_anthropic, "YES\ngreen")
    queue += [
        bash("cd pkg && python3 -m unittest"),
        {"text": "fix", "tool_calls": [{"name": "edit", "input": {**FIX, "path": "pkg/calc.py"}}]},
        bash("echo note > pkg/notes.txt && rm pkg/test_calc.py"),
        # the loop guard refuses the fourth identical call: it never ran
        bash("ls pkg"),
        bash("ls pkg"),
        bash("ls pkg"),
        bash("ls pkg"),
        {"text": "save", "tool_calls": [{"name": "save_result", "input": {"filename": "out.txt", "content": "3 OK"}}]},
        {"text": "Fixed mean() in pkg/calc.py; the suite is green."},
    ]
    run = services.run_start(kind="task", name_or_path=str(path), args=[])
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert run.state == "finished"

    evidence = evidence_of(run)
    assert evidence.changed_files == ("pkg/calc.py", "pkg/notes.txt", "pkg/test_calc.py")
    assert evidence.commands == (
        "cd pkg && python3 -m unittest",
        "echo note > pkg/notes.txt && rm pkg/test_calc.py",
        "ls pkg",
        "ls pkg",
        "ls pkg",
    )
    assert evidence.final_answer == "Fixed mean() in pkg/calc.py; the suite is green."
    assert evidence.results == {"out.txt": "3 OK"}
    ledger = LedgerEntry.objects.filter(run=run).aggregate(total=Sum("counted_tokens"))["total"]
    assert evidence.tokens == run.tokens_counted == ledger > 0

    # graded: the deleted test is outside the scope, rm is forbidden
    failures = grade(
        Expect(files_changed=("pkg/calc.py", "pkg/notes.txt"), commands_forbidden=("rm *",), output_matches=("OK$",)),
        evidence,
    )
    assert [f.row() for f in failures] == [
        {
            "assertion": "files_changed",
            "message": "pkg/test_calc.py changed, outside files_changed (pkg/calc.py, pkg/notes.txt)",
        },
        {
            "assertion": "commands_forbidden",
            "message": "'rm pkg/test_calc.py' (in 'echo note > pkg/notes.txt && rm pkg/test_calc.py') "
            "matches the forbidden pattern 'rm *'",
        },
    ]

    # the copy discarded: the stat the run recorded says the same
    workspace = Workspace.objects.get(run=run)
    Workspace.objects.filter(pk=workspace.pk).update(state=WorkspaceState.DISCARDED)
    assert evidence_of(run).changed_files == evidence.changed_files
    # the results folder overwritten by a later run: the snapshot still says what this run saved
    (Path(run.output_dir) / "out.txt").write_text("a later run's")
    assert evidence_of(run).results == {"out.txt": "3 OK"}


def _run(**fields) -> Run:
    defaults = dict(
        kind="task", name="job", target="task/job", recipe_path="x.md", recipe_text="x", provider="scripted"
    )
    return Run.objects.create(**{**defaults, **fields})


def _step(run_pass: Pass, number: int, **fields) -> Step:
    defaults = dict(model="m", max_tokens=10, reserved_tokens=10, status=StepStatus.DONE, leg="task")
    return Step.objects.create(run_pass=run_pass, number=number, **{**defaults, **fields})


def _call(id_: str, command: str, name: str = "bash") -> dict:
    return {"id": id_, "name": name, "input": {"command": command}}


def _result(id_: str, content) -> dict:
    return {"type": "tool_result", "tool_use_id": id_, "content": content, "is_error": False}


@pytest.mark.django_db
def test_it_counts_only_commands_that_ran(tmp_path):
    run = _run(output_dir=str(tmp_path / "out"), tokens_counted=1234)
    first = Pass.objects.create(run=run, number=1)
    calls = [
        _call("a", "pytest -q"),
        _call("b", "git push"),
        _call("c", "make"),
        _call("d", "sleep 100"),
        _call("e", "rm -rf /"),
        _call("f", "ignored", name="grep"),
        _call("g", "cat big"),
    ]
    results = [
        _result("a", "exit status: 0\n(no output)"),
        _result("b", "not done: a person rejected this action. Their reason: no"),
        _result("c", "not run: the run was cancelled"),
        _result("d", "killed: timed out after 2m0s"),
        _result("e", "outcome unknown: the worker was lost while this call ran"),
        _result("f", "exit status: 0"),
        _result("g", [{"type": "text", "text": "exit status: 0\n<stdout>"}, {"type": "image", "source": {}}]),
    ]
    _step(first, 1, tool_calls=calls, tool_results=results, text="working")
    # a step whose results were never recorded: its call may have run
    _step(first, 2, tool_calls=[_call("h", "ls")], tool_results=[], status=StepStatus.LOST)
    _step(first, 3, text="The answer.", leg="wrap-up")
    _step(first, 4, text="YES\nall good", leg="judging")
    _step(first, 5, text="")
    evidence = evidence_of(run)
    assert evidence.commands == ("pytest -q", "sleep 100", "rm -rf /", "cat big", "ls")
    assert evidence.final_answer == "The answer."
    assert evidence.changed_files == ()  # no working copy
    assert evidence.tokens == 1234


@pytest.mark.django_db
def test_it_reads_text_results_from_the_folder_when_nothing_was_kept(tmp_path):
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "report.md").write_text("# report\nfine")
    (out / "sub/data.json").write_text('{"ok": true}')
    (out / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (out / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (out / "big.txt").write_bytes(b"a" * (RESULT_CAP_BYTES - 1) + "\u00e9".encode() + b"tail")
    (out / ".hidden").write_text("no")
    run = _run(output_dir=str(out))
    evidence = evidence_of(run)
    assert sorted(evidence.results) == ["big.txt", "report.md", "sub/data.json"]
    assert evidence.results["big.txt"] == "a" * (RESULT_CAP_BYTES - 1)  # cut at the cap, mid-character
    assert evidence.results["sub/data.json"] == '{"ok": true}'
    assert evidence.final_answer == "" and evidence.commands == ()
