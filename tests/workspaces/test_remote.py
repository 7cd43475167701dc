"""A coding recipe from the catalogue when the recipes repository is a remote (a clone URL):
the mirror is fetched when a run is armed and the copy starts at the remote branch's head, and
keep pushes the branch to the remote, never forced, with no token stored anywhere."""

import pytest

from catalogue.sync import recipes_sync
from runs import services
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture: the API is reachable)
from tests.recipes_git import git
from tests.workspaces.conftest import CALC, FIX, write_recipe
from workspaces import services as ws
from workspaces.models import Workspace, installation_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def remote(tmp_path, settings, results_root):
    """A bare `origin` with the code and a coding recipe, named by a file:// URL."""
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg/calc.py").write_text(CALC)
    write_recipe(work, workdir="pkg")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "code and recipe")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(origin))
    settings.RYSH_RECIPES_REPO = f"file://{origin}"
    settings.DATA_DIR = tmp_path / "data"
    recipes_sync()
    return origin, git(work, "rev-parse", "HEAD")


def test_a_catalogue_recipe_runs_at_the_branch_head_and_keep_pushes_to_the_remote(remote, fake_anthropic):
    origin, commit = remote
    run = services.run_start(kind="task", name_or_path="fix", args=[])
    workspace = Workspace.objects.get(run=run)
    assert workspace.base_commit == commit and workspace.source_path == ""
    assert run.recipe_version.commit_sha == commit
    run = drive(run, FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Done."}]))
    assert run.cause == "fulfilled"
    said = ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    branch = Workspace.objects.get(run=run).kept_branch
    assert branch == f"rysh/fix/{installation_key()}-run-{run.pk}"
    assert git(origin, "show", f"{branch}:pkg/calc.py").endswith("return sum(values) / len(values)")
    assert git(origin, "rev-parse", "main") == commit  # the tracked branch did not move
    assert f"git fetch file://{origin} {branch}" in said


def test_a_run_fetches_the_mirror_first_and_starts_at_the_remotes_newest_commit(remote, tmp_path, fake_anthropic):
    origin, synced = remote
    work = tmp_path / "work"
    (work / "pkg/more.py").write_text("MORE = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "pushed after the sync")
    git(work, "push", "-q", str(origin), "main")
    newest = git(work, "rev-parse", "HEAD")
    run = services.run_start(kind="task", name_or_path="fix", args=[])
    workspace = Workspace.objects.get(run=run)
    assert (workspace.base_ref, workspace.base_commit) == ("main", newest)
    assert run.recipe_version.commit_sha == synced
    run = drive(
        run, FakeModel(task=[{"text": "read", "tools": [tool("file_read", path="more.py")]}, {"text": "Done."}])
    )
    assert "MORE = 1" in run.passes.get().steps.get(number=1).tool_results[0]["content"]


def test_when_the_remote_does_not_answer_the_mirror_is_used_and_that_is_said(remote, tmp_path, fake_anthropic):
    origin, synced = remote
    origin.rename(tmp_path / "away.git")
    lines = services.run_start(kind="task", name_or_path="fix", args=[], dry_run=True).lines
    said = next(line for line in lines if line.startswith("working copy:"))
    assert f"from main at {synced[:8]} of file://{origin}" in said
    assert "could not fetch" in said and "what was last fetched" in said
    run = services.run_start(kind="task", name_or_path="fix", args=[])
    assert Workspace.objects.get(run=run).base_commit == synced
    assert run.events.filter(message__startswith="could not fetch").exists()


def test_keep_never_overwrites_the_remotes_branch_of_that_name(remote, tmp_path, fake_anthropic):
    origin, synced = remote
    run = services.run_start(kind="task", name_or_path="fix", args=[])
    run = drive(run, FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Done."}]))
    branch = Workspace.objects.get(run=run).branch
    other = tmp_path / "other"  # another installation, run #1 too, pushed first
    git(tmp_path, "clone", "-q", str(origin), str(other))
    (other / "theirs.txt").write_text("theirs\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "their run")
    git(other, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
    theirs = git(other, "rev-parse", "HEAD")
    with pytest.raises(ws.WorkspaceRefused, match=f"the branch {branch} already exists .* {branch}-2"):
        ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    assert git(origin, "rev-parse", branch) == theirs
    said = ws.workspace_keep(workspace=Workspace.objects.get(run=run), branch=f"{branch}-2")
    assert git(origin, "show", f"{branch}-2:pkg/calc.py").endswith("return sum(values) / len(values)")
    assert git(origin, "rev-parse", branch) == theirs and f"git fetch file://{origin} {branch}-2" in said
