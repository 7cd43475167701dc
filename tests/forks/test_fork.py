"""A fork (docs/forks.md) on the engine with a test model: it starts from the end of the pass it
forks (working copy and results file by file), its first pass is seeded as the parent's next one
would have been, with the edits; a redo starts one pass earlier; lineage and audit are kept; a
non-coding fork goes on beside its running parent."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.ports import ToolResult, Tools
from audit.models import AuditEntry
from budgets.units import PAGE
from runs import services
from runs.arming import arm
from runs.forks import ForkEdits, ForkRefused, budget_overrides, fork_plan, fork_points, run_fork
from runs.models import LedgerEntry, Pass, Run, RunState
from runs.results import snapshots
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.forks.fork_fixtures import (  # noqa: F401 (fixtures)
    files_of_commit,
    files_of_folder,
    files_of_tree,
    four_pass_recipe,
    per_pass,
    start_four,
)
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)
from workspaces.copies import Copy
from workspaces.models import Workspace, WorkspacePass

pytestmark = pytest.mark.django_db

NEW_PROMPT = "Fix calc.mean so the test passes; change calc.py only."


def failed_parent(start_four) -> Run:
    run = drive(start_four(), per_pass(judge=["NO\ngap one", "NO\ngap two", "NO\ngap three", "NO\ngap four"]))
    assert run.cause.startswith("unfulfilled"), run.cause
    return run


def snapshot_bytes(run: Run, number: int) -> dict[str, bytes]:
    rows = Pass.objects.get(run=run, number=number).results.all()
    found = {}
    for row in rows:
        with snapshots.open_result(row) as handle:
            found[row.name] = handle.read()
    return found


def test_a_fork_starts_as_the_pass_ended_and_goes_on_with_the_next(start_four):
    parent = failed_parent(start_four)
    fork = run_fork(run=parent, pass_number=2, user=None, edits=ForkEdits(prompt=NEW_PROMPT))
    assert (fork.forked_from_id, fork.fork_pass, fork.fork_redo) == (parent.pk, 2, False)
    assert fork.fork_edits == {"prompt": NEW_PROMPT}
    assert fork.slot.startswith("fork/task/four/") and fork.output_dir != parent.output_dir
    # the results folder as the pass-2 snapshot kept it, before any worker takes the run
    assert files_of_folder(Path(fork.output_dir)) == snapshot_bytes(parent, 2)
    assert b"notes after pass 2" in snapshot_bytes(parent, 2)["notes.md"]
    time.sleep(1.2)  # a queue's wait: what was restored is the fork's own all the same
    model = FakeModel(task=[{"text": "fix", "tools": [tool("bash", command="true")]}], judge=["YES\nfixed"])
    fork = drive(fork, model)
    assert fork.cause == "fulfilled"
    assert snapshot_bytes(fork, 3) == snapshot_bytes(parent, 2)  # its pass saved nothing new
    assert list(fork.passes.values_list("number", flat=True)) == [3]
    point = WorkspacePass.objects.get(workspace__run=parent, pass_number=2).point
    workspace = Workspace.objects.get(run=fork)
    assert workspace.base_commit == point and workspace.base_ref == f"refs/rysh/run-{parent.pk}/pass-2"
    assert workspace.branch != Workspace.objects.get(run=parent).branch
    copy = Copy(Path(workspace.home))
    assert files_of_tree(copy.tree) == files_of_commit(
        Copy(Path(Workspace.objects.get(run=parent).home)).git_dir, point
    )
    first = model.requests[0].messages[0]["content"]
    first = first if isinstance(first, str) else first[0]["text"]
    assert first.startswith(NEW_PROMPT) and "This is pass 3 of a loop." in first
    assert "gap two" in first and "gap one" not in first
    assert "pass 2 result" in first  # what pass 2 saved last, as its snapshot kept it
    assert "Keep going on the same work." in first
    assert set(LedgerEntry.objects.filter(run=fork).values_list("pass_number", flat=True)) == {3}
    entry = AuditEntry.objects.get(action="run.fork")
    assert entry.detail["parent"] == parent.pk and entry.detail["pass"] == 2
    assert entry.detail["edits"] == {"prompt": NEW_PROMPT}
    assert list(parent.forks.all()) == [fork]


def test_redo_starts_from_the_end_of_the_pass_before(start_four):
    parent = failed_parent(start_four)
    plan = fork_plan(run=parent, pass_number=3, redo=True)
    assert plan.from_pass == 2 and plan.passes_left == 2
    spent = sum(LedgerEntry.objects.filter(run=parent, pass_number__lte=2).values_list("counted_tokens", flat=True))
    assert plan.parent_spent_tokens == spent > 0
    fork = run_fork(run=parent, pass_number=3, redo=True, user=None)
    assert (fork.fork_pass, fork.fork_redo) == (2, True)
    assert files_of_folder(Path(fork.output_dir)) == snapshot_bytes(parent, 2)


def test_redo_of_the_first_pass_starts_from_the_repositorys_commit(start_four):
    parent = failed_parent(start_four)
    fork = run_fork(run=parent, pass_number=1, redo=True, user=None)
    assert fork.fork_pass == 0 and files_of_folder(Path(fork.output_dir)) == {}
    model = FakeModel(task=[{"text": "look", "tools": [tool("bash", command="ls")]}], judge=["YES\nok"])
    fork = drive(fork, model)
    assert list(fork.passes.values_list("number", flat=True)) == [1]
    parent_ws, workspace = Workspace.objects.get(run=parent), Workspace.objects.get(run=fork)
    assert workspace.base_commit == parent_ws.base_commit
    assert not (Path(workspace.home) / "tree/pkg/log.txt").exists()
    first = model.requests[0].messages[0]["content"]
    first = first if isinstance(first, str) else first[0]["text"]
    assert "This is pass" not in first  # the ordinary first message


def test_the_worst_case_counts_only_the_passes_left(start_four):
    parent = failed_parent(start_four)
    whole = fork_plan(run=parent, pass_number=0)
    late = fork_plan(run=parent, pass_number=3)
    assert whole.passes_left == 4 and late.passes_left == 1
    assert late.worst_tokens * 4 == whole.worst_tokens


def test_a_changed_recipe_forks_the_parents_version_and_says_so(start_four, four_pass_recipe):
    parent = failed_parent(start_four)
    four_pass_recipe.write_text(four_pass_recipe.read_text().replace("Make the failing", "Now make the failing"))
    plan = fork_plan(run=parent, pass_number=2)
    assert plan.recipe_text == parent.recipe_text
    assert any("changed since" in note and "parent's text" in note for note in plan.notes)
    fork = run_fork(run=parent, pass_number=2, user=None)
    assert fork.recipe_text == parent.recipe_text
    assert any("changed since" in e.message for e in fork.events.filter(kind="note"))


def test_a_task_fork_goes_on_beside_its_running_parent(recipe_file, results_root):
    path = recipe_file(
        "---\nloop:\n  while:\n    max_iterations: 3\n    prompts:\n      until: done\n---\nWrite notes.md.\n", "rl"
    )
    parent = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    # pass 1 ended, pass 2 under way: the parent holds its slot
    drive(
        parent,
        FakeModel(
            task=[{"text": "s", "tools": [tool("save_result", filename="notes.md", content="v1")]}],
            judge=["NO\nmore", "NO\nmore", "NO\nmore"],
        ),
    )
    Run.objects.filter(pk=parent.pk).update(state=RunState.RUNNING, cause="", ended_at=None)
    Pass.objects.filter(run=parent, number=3).update(ended_at=None)
    parent.refresh_from_db()
    fork = run_fork(run=parent, pass_number=2, user=None)
    assert fork.slot != parent.slot and fork.state == RunState.QUEUED
    assert (Path(fork.output_dir) / "notes.md").read_text() == "v1"
    with pytest.raises(ForkRefused, match="pass 3 has not ended") as refused:
        run_fork(run=parent, pass_number=3, user=None)
    assert refused.value.field == "pass"
    assert Run.objects.get(pk=parent.pk).state == RunState.RUNNING


FLAT = """---
loop:
  do:
    budget:
      size: {size}p
  while:
    max_iterations: {passes}
    prompts:
      until: done
---
Do the task.
"""


@settings(max_examples=200, deadline=None)
@given(
    budget=st.integers(min_value=3, max_value=20_000),
    size=st.integers(min_value=3, max_value=3_000),
    passes=st.integers(min_value=1, max_value=12),
    data=st.data(),
)
def test_a_budget_edit_is_held_by_the_outer_ceiling_or_by_the_passes_left(budget, size, passes, data):
    left = data.draw(st.integers(min_value=1, max_value=passes))
    overrides = budget_overrides(budget * PAGE, passes_left=left, per_pass=size * PAGE)
    _spec, plan = arm(FLAT.format(size=size, passes=passes), path="t.md", kind="task", overrides=overrides)
    assert plan.outer_tokens == budget * PAGE or left * plan.per_pass.tokens <= budget * PAGE
    worst = dataclasses.replace(plan, passes=left).worst_tokens
    assert worst <= budget * PAGE + left * plan.judge_tokens


def test_a_fork_of_a_fork_goes_on_from_the_forks_own_pass(start_four):
    parent = failed_parent(start_four)
    child = drive(run_fork(run=parent, pass_number=1, user=None), per_pass(judge=["NO\nc2", "NO\nc3", "NO\nc4"]))
    assert list(child.passes.values_list("number", flat=True)) == [2, 3, 4]
    points = fork_points(child)
    assert points[1].startswith(f"this run starts from run #{parent.pk} at pass 1") and points[2] == ""
    with pytest.raises(ForkRefused, match="fork that run there instead"):
        run_fork(run=child, pass_number=2, redo=True, user=None)
    grandchild = run_fork(run=child, pass_number=3, user=None)
    assert files_of_folder(Path(grandchild.output_dir)) == snapshot_bytes(child, 3)
    assert {"pass-1.md", "pass-2.md", "pass-3.md", "notes.md"} <= set(snapshot_bytes(child, 3))
    point = WorkspacePass.objects.get(workspace__run=child, pass_number=3).point
    child_git = Copy(Path(Workspace.objects.get(run=child).home)).git_dir
    assert files_of_commit(child_git, point)["pkg/log.txt"] == b"pass-1\npass-2\npass-3\n"
    grandchild = drive(grandchild, FakeModel(task=[{"text": "ok"}], judge=["YES\ndone"]))
    assert grandchild.cause == "fulfilled"
    tree = files_of_tree(Copy(Path(Workspace.objects.get(run=grandchild).home)).tree)
    assert tree == files_of_commit(child_git, point)


class WebTools(Tools):
    """A browser's tools port stand-in: one tool that saves a result into the run's folder."""

    def __init__(self, folder: Path):
        self.folder = folder

    def specs(self):
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        return [{"name": "save_result", "description": "save", "input_schema": schema}]

    def call(self, name, arguments):
        (self.folder / "found.md").write_text(arguments["text"])
        return ToolResult("saved")

    def close(self):
        pass


def test_a_web_run_forks_with_its_results_and_says_the_browser_is_not_restored(tmp_path, results_root, db):
    from tests.runs.test_approvals import drive_with

    folder = tmp_path / "repo/.rysh/automations/web"
    folder.mkdir(parents=True)
    path = folder / "look.md"
    path.write_text("---\nloop:\n  while:\n    max_iterations: 3\n    prompts:\n      until: found\n---\nLook.\n")
    (folder / "look.script.yaml").write_text('passes:\n  - task:\n      - text: Done.\n    judge: "YES\\nok"\n')
    parent = services.run_start(kind="web", name_or_path=str(path), args=[], provider="scripted")
    save = lambda n: {"text": "s", "tools": [tool("save_result", text=f"found {n}")]}  # noqa: E731
    model = FakeModel(task=[save(1), {"text": "Done."}], judge=["NO\nmore", "NO\nmore", "NO\nmore"])
    parent = drive_with(parent, model, WebTools(Path(parent.output_dir)))
    assert parent.kind == "web" and parent.passes.count() == 3
    plan = fork_plan(run=parent, pass_number=1)
    assert any("browser's live state" in note for note in plan.notes)
    fork = run_fork(run=parent, pass_number=1, user=None)
    assert fork.slot == parent.target  # one browser profile: the recipe's slot
    assert (Path(fork.output_dir) / "found.md").read_text() == "found 1"
    assert any("browser's live state" in e.message for e in fork.events.filter(kind="note"))
