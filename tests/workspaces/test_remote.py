"""A coding recipe from the catalogue when the recipes repository is a remote (a clone URL):
the copy comes from our mirror at the version's commit, and keep pushes the branch to the remote,
never forced, with no token stored anywhere."""

import pytest

from catalogue.sync import recipes_sync
from runs import services
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture: the API is reachable)
from tests.recipes_git import git
from tests.workspaces.conftest import CALC, FIX, write_recipe
from workspaces import services as ws
from workspaces.models import Workspace

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


def test_a_catalogue_recipe_runs_at_its_versions_commit_and_keep_pushes_to_the_remote(remote, fake_anthropic):
    origin, commit = remote
    run = services.run_start(kind="task", name_or_path="fix", args=[])
    workspace = Workspace.objects.get(run=run)
    assert workspace.base_commit == commit and workspace.source_path == ""
    assert run.recipe_version.commit_sha == commit
    run = drive(run, FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Done."}]))
    assert run.cause == "fulfilled"
    said = ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    branch = f"rysh/fix/run-{run.pk}"
    assert git(origin, "show", f"{branch}:pkg/calc.py").endswith("return sum(values) / len(values)")
    assert git(origin, "rev-parse", "main") == commit  # the tracked branch did not move
    assert f"git fetch file://{origin} {branch}" in said
