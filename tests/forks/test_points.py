"""Restorable points (docs/forks.md): every pass of a coding run leaves a commit of its working
copy on a hidden ref of the run, chained pass to pass; Keep's branch never holds them; retention
takes them with the copy, and fork_points says which passes can still be forked and why not."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from runs.forks import BROWSER_NOT_RESTORED, fork_caveat, fork_points
from runs.models import Run
from tests.conftest import drive
from tests.forks.fork_fixtures import files_of_commit, four_pass_recipe, per_pass, start_four  # noqa: F401
from tests.recipes_git import git
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)
from workspaces import services as ws
from workspaces.copies import Copy
from workspaces.copies import git as copy_git
from workspaces.models import Workspace, WorkspacePass

pytestmark = pytest.mark.django_db


def three_failed_passes(start_four) -> Run:
    return drive(start_four(), per_pass(judge=["NO\nnot yet 1", "NO\nnot yet 2", "YES\nfine"]))


def test_it_keeps_one_point_a_pass_on_hidden_refs_chained_from_the_base(start_four):
    run = three_failed_passes(start_four)
    assert run.cause == "fulfilled"
    workspace = Workspace.objects.get(run=run)
    copy = Copy(Path(workspace.home))
    rows = list(WorkspacePass.objects.filter(workspace=workspace).order_by("pass_number"))
    assert [r.pass_number for r in rows] == [1, 2, 3]
    parent = workspace.base_commit
    for row in rows:
        assert row.point, row.pass_number
        ref = f"refs/rysh/run-{run.pk}/pass-{row.pass_number}"
        assert copy_git(copy, "rev-parse", ref).strip() == row.point
        assert copy_git(copy, "rev-parse", f"{row.point}^{{tree}}").strip() == row.tree
        assert copy_git(copy, "rev-parse", f"{row.point}^").strip() == parent
        assert "rysh <rysh@localhost>" in copy_git(copy, "log", "-1", "--format=%an <%ae>", row.point)
        parent = row.point
    files = files_of_commit(copy.git_dir, rows[1].point)
    assert files["pkg/log.txt"] == b"pass-1\npass-2\n"
    assert "pkg/only-2.txt" in files and "pkg/only-3.txt" not in files
    # no branch holds a point: the copy's branch is where it started
    assert copy_git(copy, "branch", "--contains", rows[0].point).strip() == ""
    assert fork_points(run) == {0: "", 1: "", 2: "", 3: ""}


def test_keep_pushes_its_branch_and_never_a_point(start_four, code_repo):
    run = three_failed_passes(start_four)
    workspace = Workspace.objects.get(run=run)
    ws.workspace_keep(workspace=workspace)
    assert git(code_repo, "for-each-ref", "refs/rysh/") == ""
    kept = Workspace.objects.get(run=run).kept_commit
    points = WorkspacePass.objects.filter(workspace=workspace).values_list("point", flat=True)
    history = git(code_repo, "rev-list", kept).split()
    assert not set(points) & set(history)


def test_retention_takes_the_points_with_the_copy_and_says_so(start_four, settings):
    run = three_failed_passes(start_four)
    Run.objects.filter(pk=run.pk).update(ended_at=timezone.now() - timedelta(days=30))
    assert ws.workspaces_prune(days=7)
    assert set(WorkspacePass.objects.filter(workspace__run=run).values_list("point", flat=True)) == {""}
    points = fork_points(Run.objects.get(pk=run.pk))
    assert points[0] == ""  # the start is the repository's commit, not the copy's
    for n in (1, 2, 3):
        assert "its restorable point went with the working copy, removed by retention" in points[n], points[n]


def test_a_copy_removed_behind_the_databases_back_is_seen(start_four):
    run = three_failed_passes(start_four)
    shutil.rmtree(Path(Workspace.objects.get(run=run).home) / "git")
    assert "is gone with the working copy" in fork_points(run)[2]


def test_pruned_snapshots_refuse_every_pass_but_the_start(start_four):
    run = three_failed_passes(start_four)
    Run.objects.filter(pk=run.pk).update(snapshots_pruned_at=timezone.now())
    points = fork_points(Run.objects.get(pk=run.pk))
    assert points[0] == ""
    assert all("results were removed by retention" in points[n] for n in (1, 2, 3))


def test_a_web_run_says_its_browser_cannot_be_restored():
    assert fork_caveat(Run(kind="web")) == BROWSER_NOT_RESTORED
    assert fork_caveat(Run(kind="task")) == ""
