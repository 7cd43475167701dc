"""Keep never destroys work: no forced ref update, a branch that holds other work is refused with a
free name offered, names carry the installation's key, `--run` must be the named recipe's, a
copy with no change makes no branch, and the run page's buttons follow the copy's state."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import FIX, write_recipe
from workspaces import copies
from workspaces import services as ws
from workspaces.copies import Copy
from workspaces.models import Workspace, WorkspaceState, installation_key

pytestmark = pytest.mark.django_db


def fixed_run(start_fix, name="fix"):
    return drive(start_fix(name), FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Done."}]))


def other_work(repo, branch):
    """Someone else's commits under `branch` (another installation's run #1, a person's branch)."""
    git(repo, "checkout", "-q", "-b", branch)
    (repo / "theirs.txt").write_text("their work\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "their work")
    git(repo, "checkout", "-q", "main")
    return git(repo, "rev-parse", branch)


def test_branch_names_carry_this_installations_key(start_fix):
    key = installation_key()
    assert re.fullmatch(r"[0-9a-f]{6}", key) and installation_key() == key
    run = start_fix()
    assert Workspace.objects.get(run=run).branch == f"rysh/fix/{key}-run-{run.pk}"


def test_keep_refuses_a_branch_that_holds_other_work_and_keeps_under_the_name_it_offers(start_fix, code_repo):
    run = fixed_run(start_fix)
    branch = run.workspace.branch
    theirs = other_work(code_repo, branch)
    other_work(code_repo, f"{branch}-2")  # the first free name is -3
    with pytest.raises(ws.WorkspaceRefused) as refused:
        ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    said = str(refused.value)
    assert f"the branch {branch} already exists in {code_repo} and holds commits this work does not" in said
    assert f"--run {run.pk} --branch {branch}-3" in said and "Keep as" in said
    assert git(code_repo, "rev-parse", branch) == theirs  # never overwritten
    workspace = Workspace.objects.get(run=run)
    assert workspace.state == WorkspaceState.ACTIVE and workspace.offered_branch == f"{branch}-3"
    # the run page offers that name, ready to press
    page = client_for(user_with("editor")).get(f"/runs/{run.pk}/").content.decode()
    assert 'id="keep-offer"' in page and f'value="{branch}-3"' in page and 'data-branch-from="#keep-branch"' in page
    out = StringIO()
    call_command("auto", "task", "keep", "fix", "--run", str(run.pk), "--branch", f"{branch}-3", stdout=out)
    workspace.refresh_from_db()
    assert f"kept as {workspace.kept_commit[:8]} on {branch}-3" in out.getvalue()
    assert (workspace.kept_branch, workspace.offered_branch) == (f"{branch}-3", "")
    assert git(code_repo, "rev-parse", f"{branch}-3") == workspace.kept_commit
    assert git(code_repo, "show", f"{branch}-3:pkg/calc.py").endswith("return sum(values) / len(values)")
    assert git(code_repo, "rev-parse", branch) == theirs


def test_keep_moves_a_branch_forward_when_it_is_in_the_works_history(start_fix, code_repo):
    run = fixed_run(start_fix)
    workspace = Workspace.objects.get(run=run)
    git(code_repo, "branch", workspace.branch, workspace.base_commit)  # an ancestor of the work
    ws.workspace_keep(workspace=workspace)
    first = Workspace.objects.get(run=run).kept_commit
    assert git(code_repo, "rev-parse", workspace.branch) == first
    # more work in the copy (a continued run): Keep again moves the same branch on, never forced
    with open(workspace.home + "/tree/pkg/notes.md", "w") as handle:
        handle.write("more\n")
    again = ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    second = Workspace.objects.get(run=run).kept_commit
    assert second != first and f"kept as {second[:8]} on {workspace.branch}" in again
    assert git(code_repo, "rev-parse", f"{workspace.branch}~1") == first  # a fast-forward
    assert "nothing changed since" in ws.workspace_keep(workspace=Workspace.objects.get(run=run))


def test_keep_under_a_name_of_ones_own_must_be_a_branch_under_rysh(start_fix, code_repo):
    run = fixed_run(start_fix)
    for bad in ("main", "rysh/a b", "-f", "rysh/x..y"):
        with pytest.raises(ws.WorkspaceRefused, match="expected a branch name under rysh/"):
            ws.workspace_keep(workspace=Workspace.objects.get(run=run), branch=bad)
    assert git(code_repo, "branch", "--list", "rysh/*") == ""


def test_keep_with_no_change_says_so_and_makes_no_branch(start_fix, code_repo):
    run = drive(
        start_fix(), FakeModel(task=[{"text": "look", "tools": [tool("bash", command="ls")]}, {"text": "Fine."}])
    )
    with pytest.raises(ws.WorkspaceRefused, match="no change in its working copy .*nothing to keep, and no branch"):
        ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    assert git(code_repo, "branch", "--list", "rysh/*") == ""
    assert Workspace.objects.get(run=run).state == WorkspaceState.ACTIVE
    page = client_for(user_with("editor")).get(f"/runs/{run.pk}/").content.decode()
    assert "No change: the run ended without changing its working copy." in page
    assert "Keep</button>" not in page and "Discard</button>" not in page


def test_a_run_id_of_another_recipe_is_refused_naming_whose_run_it_is(start_fix, code_repo):
    write_recipe(code_repo, workdir="pkg", name="other")
    other = fixed_run(start_fix, "other")
    fixed_run(start_fix)
    for verb in ("keep", "discard", "diff"):
        with pytest.raises(
            CommandError, match=f"run #{other.pk} is a run of task/other, not of task/fix: name its own"
        ):
            call_command("auto", "task", verb, "fix", "--run", str(other.pk))
    assert Workspace.objects.get(run=other).state == WorkspaceState.ACTIVE
    assert git(code_repo, "branch", "--list", "rysh/*") == ""
    call_command("auto", "task", "keep", "other", "--run", str(other.pk), stdout=StringIO())
    assert Workspace.objects.get(run=other).state == WorkspaceState.KEPT


def test_the_page_offers_keep_again_once_a_kept_copy_changed(start_fix):
    run = fixed_run(start_fix)
    ws.workspace_keep(workspace=Workspace.objects.get(run=run))
    editor = client_for(user_with("editor"))
    assert "Keep</button>" not in editor.get(f"/runs/{run.pk}/").content.decode()
    workspace = Workspace.objects.get(run=run)
    with open(workspace.home + "/tree/pkg/later.txt", "w") as handle:
        handle.write("later\n")
    ws.workspace_measure(workspace=workspace)
    page = editor.get(f"/runs/{run.pk}/").content.decode()
    assert "Keep</button>" in page and "The copy changed since: Keep again" in page
    assert "Discard</button>" not in page  # a kept copy is not discarded


def test_keep_as_from_the_page_after_a_refusal(start_fix, code_repo):
    run = fixed_run(start_fix)
    branch = run.workspace.branch
    theirs = other_work(code_repo, branch)
    editor = client_for(user_with("editor"))
    refused = editor.post(f"/runs/{run.pk}/workspace/keep/", HTTP_HX_REQUEST="true").content.decode()
    assert "never overwritten" in refused and f'value="{branch}-2"' in refused  # the answer carries the offer
    kept = editor.post(f"/runs/{run.pk}/workspace/keep/", {"branch": f"{branch}-2"}, HTTP_HX_REQUEST="true")
    assert "kept as" in kept.content.decode()
    workspace = Workspace.objects.get(run=run)
    assert (
        workspace.kept_branch == f"{branch}-2" and git(code_repo, "rev-parse", f"{branch}-2") == workspace.kept_commit
    )
    assert git(code_repo, "rev-parse", branch) == theirs


def test_keep_refuses_work_whose_diff_cannot_be_shown(start_fix, code_repo):
    """Keep commits what the Changes page showed: when git cannot show the diff (here an object
    of the start commit is missing), nobody saw what would be committed, and nothing is."""
    run = fixed_run(start_fix)
    workspace = Workspace.objects.get(run=run)
    copy = Copy(Path(workspace.home))
    blob = copies.git(copy, "rev-parse", f"{workspace.base_commit}:pkg/calc.py").strip()
    (copy.git_dir / "objects" / blob[:2] / blob[2:]).unlink()

    with pytest.raises(ws.WorkspaceRefused, match=f"run #{run.pk}: not kept: its diff cannot be shown"):
        ws.workspace_keep(workspace=workspace)

    assert git(code_repo, "branch", "--list", "rysh/*") == ""
    assert copies.git(copy, "rev-parse", workspace.branch).strip() == workspace.base_commit  # nothing committed
    assert Workspace.objects.get(run=run).state == WorkspaceState.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_a_repository_inside_the_copy_with_a_hostile_gitmodules_leaves_changes_and_keep_working(start_fix, code_repo):
    make_nested = (
        "mkdir -p vendor/lib && cd vendor/lib && git init -q && echo 'x = 1' > lib.py && git add -A && "
        "git -c user.name=a -c user.email=a@b commit -q -m lib && cd ../.. && "
        "printf '[submodule \"lib\"]\\n\\tpath = pkg/vendor/lib\\n\\tupdate = !true\\n' > ../.gitmodules"
    )
    model = FakeModel(
        task=[
            {"text": "vendor", "tools": [tool("bash", command=make_nested)]},
            {"text": "fix", "tools": [tool("edit", **FIX)]},
            {"text": "Done."},
        ]
    )
    run = drive(start_fix(), model)
    assert run.cause == "fulfilled", run.cause
    workspace = Workspace.objects.get(run=run)
    assert {row["path"] for row in workspace.stat} == {".gitmodules", "pkg/calc.py"}

    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/changes/").content.decode()
    assert "return sum(values) / len(values)" in page and "invalid value" not in page

    said = ws.workspace_keep(workspace=workspace)
    sha = Workspace.objects.get(run=run).kept_commit
    assert f"kept as {sha[:8]}" in said
    assert git(code_repo, "ls-tree", "-r", "--name-only", sha).splitlines() == [
        ".gitmodules",
        ".rysh/automations/tasks/fix.md",
        ".rysh/automations/tasks/fix.script.yaml",
        "pkg/calc.py",
        "pkg/test_calc.py",
    ]
