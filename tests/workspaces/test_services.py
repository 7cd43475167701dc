"""Working copies of coding runs end to end on the scripted path: armed at start, made by the
worker, measured per pass, kept, discarded, carried over by a resume, pruned."""

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit.models import AuditEntry
from runs import services
from runs.models import Run, RunEvent
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import CALC, FIX, write_recipe
from workspaces import services as ws
from workspaces.models import Workspace, WorkspacePass, WorkspaceState, installation_key

pytestmark = pytest.mark.django_db


def fixer(*extra):
    """Runs the tests, fixes calc.py, runs them again, answers."""
    return FakeModel(
        task=[
            {"text": "run the tests", "tools": [tool("bash", command="python3 -m unittest 2>&1 | tail -1")]},
            {"text": "fix", "tools": [tool("edit", **FIX)]},
            {"text": "again", "tools": [tool("bash", command="python3 -m unittest")]},
            *extra,
            {"text": "Fixed mean(); the suite passes."},
        ]
    )


def test_it_arms_a_copy_at_the_commit_and_makes_it_when_a_worker_takes_the_run(start_fix, code_repo):
    run = start_fix()
    workspace = Workspace.objects.get(run=run)
    assert workspace.state == WorkspaceState.PENDING
    assert workspace.base_commit == git(code_repo, "rev-parse", "HEAD") and workspace.base_ref == "main"
    assert (workspace.workdir, workspace.branch) == ("pkg", f"rysh/fix/{installation_key()}-run-{run.pk}")
    model = fixer()
    run = drive(run, model)
    assert (run.state, run.cause) == ("finished", "fulfilled")
    workspace.refresh_from_db()
    assert workspace.state == WorkspaceState.ACTIVE and workspace.sandboxed
    results = [s.tool_results for s in run.passes.get().steps.order_by("number")]
    assert "FAILED" in results[0][0]["content"] and "exit status: 0" in results[2][0]["content"]
    assert workspace.stat == [{"path": "pkg/calc.py", "added": 1, "removed": 1, "status": "M"}]
    assert WorkspacePass.objects.get(workspace=workspace, pass_number=1).stat == workspace.stat
    # the repository's own checkout is untouched
    assert (code_repo / "pkg/calc.py").read_text() == CALC
    assert git(code_repo, "status", "--porcelain") == ""
    assert git(code_repo, "branch", "--list", "rysh/*") == ""
    # the judge read the final answer and the diff stat beside the result
    judged = model.requests[-1].messages[0]["content"][0]["text"]
    assert "<final_answer>\nFixed mean(); the suite passes.\n</final_answer>" in judged
    assert "M pkg/calc.py  +1 -1" in judged
    # the agent was told where it works
    assert f"your working folder is {workspace.home}/tree/pkg" in model.requests[0].system
    report = (Path(run.output_dir) / "run-report.md").read_text()
    assert "## Working copy" in report and "M pkg/calc.py  +1 -1" in report and "bubblewrap" in report
    assert f"`main` at {workspace.base_commit[:12]} (recipe file {run.recipe_path})" in report


def test_a_dry_run_says_where_the_agent_works_from_which_commit_and_how_commands_run(start_fix, code_repo):
    lines = start_fix(dry_run=True).lines
    head = git(code_repo, "rev-parse", "HEAD")
    recipe = code_repo / ".rysh/automations/tasks/fix.md"
    assert (
        f"working copy: its own copy of the repository from main at {head[:8]} of {code_repo} (recipe file {recipe}), "
        "working in pkg; commands in the bubblewrap sandbox"
    ) in lines
    assert not Workspace.objects.exists()


def test_it_refuses_a_workdir_the_repository_does_not_have(start_fix, code_repo):
    write_recipe(code_repo, workdir="nowhere", name="lost")
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "lost")
    # refused as `check` refuses it (every way to start does), at the recipe's line
    with pytest.raises(
        services.RunRefused, match="lost.md:2 workdir: expected .* a folder of the repository, got 'nowhere'"
    ):
        start_fix("lost")
    assert not Run.objects.exists()


def test_it_refuses_a_recipe_outside_any_git_repository(recipe_file, db):
    path = recipe_file('---\nworkdir: "."\n---\nFix it.\n', name="loose")
    with pytest.raises(services.RunRefused, match="not in a git repository"):
        services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    assert not Run.objects.exists()


def test_it_refuses_a_repository_with_no_commit(recipe_file, tmp_path, db):
    path = recipe_file('---\nworkdir: "."\n---\nFix it.\n', name="fresh")
    git(tmp_path / "repo", "init", "-q")
    with pytest.raises(services.RunRefused, match="has no commit yet"):
        services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")


def test_it_refuses_a_workdir_run_when_the_sandbox_cannot_start(start_fix, settings):
    settings.RYSH_SANDBOX_BWRAP = "/nonexistent/bwrap"
    with pytest.raises(services.RunRefused, match="the sandbox cannot start on this machine.*RYSH_SANDBOX=off"):
        start_fix()
    assert not Run.objects.exists()


def test_a_worker_without_the_sandbox_leaves_the_run_queued_for_one_that_can(start_fix, settings):
    run = start_fix()
    settings.RYSH_SANDBOX_BWRAP = "/nonexistent/bwrap"  # the worker's machine has no bubblewrap
    model = fixer()
    run = drive(run, model)  # the whole story: tests/runs/test_worker_sandbox.py
    assert (run.state, run.cause) == ("queued", "")
    assert model.calls == 0 and Workspace.objects.get(run=run).state == WorkspaceState.PENDING


def test_it_runs_unsandboxed_only_when_an_admin_says_so_and_says_it_everywhere(start_fix, settings):
    settings.RYSH_SANDBOX_BWRAP = "/nonexistent/bwrap"
    settings.RYSH_SANDBOX = "off"
    looks = {"text": "look", "tools": [tool("bash", command="git status --short && git log --oneline -1 && git diff")]}
    run = drive(start_fix(), fixer(looks))
    assert run.cause == "fulfilled"
    assert not run.workspace.sandboxed
    assert RunEvent.objects.filter(run=run, message__startswith="SANDBOX OFF").exists()
    assert "**OFF** (RYSH_SANDBOX=off)" in (Path(run.output_dir) / "run-report.md").read_text()
    # git works in the agent's commands: the tree's .git names the copy's git directory
    said = run.passes.get().steps.get(number=4).tool_results[0]["content"]
    assert said.startswith("exit status: 0") and " M calc.py" in said and "code and recipe" in said, said
    assert "+    return sum(values) / len(values)" in said
    # every page of the run says so at its top
    viewer = client_for(user_with("viewer"))
    for page, first in ((f"/runs/{run.pk}/", 'id="run-head"'), (f"/runs/{run.pk}/changes/", 'id="diff"')):
        html = viewer.get(page).content.decode()
        assert html.index('id="sandbox-off"') < html.index(first), page  # at its top, above what it shows
        assert "<strong>Sandbox off</strong>" in html


def test_it_keeps_the_work_on_its_branch_in_the_repository(start_fix, code_repo, django_user_model):
    run = drive(start_fix(), fixer())
    ada = django_user_model.objects.create_user("ada", email="ada@example.com")
    said = ws.workspace_keep(workspace=run.workspace, user=ada)
    workspace = Workspace.objects.get(run=run)
    assert workspace.state == WorkspaceState.KEPT and workspace.kept_by == ada
    branch = f"rysh/fix/{installation_key()}-run-{run.pk}"
    assert workspace.kept_branch == branch
    assert git(code_repo, "rev-parse", f"refs/heads/{branch}") == workspace.kept_commit
    assert git(code_repo, "show", f"{branch}:pkg/calc.py").endswith("return sum(values) / len(values)")
    assert git(code_repo, "log", "-1", "--format=%an <%ae>", branch) == "ada <ada@example.com>"
    assert f"git fetch {code_repo} {branch}" in said
    assert (code_repo / "pkg/calc.py").read_text() == CALC  # its checkout untouched
    entry = AuditEntry.objects.get(action="workspace.keep")
    assert entry.detail["branch"] == branch and entry.actor == ada
    # its copy goes with retention like any other; the branch holds the work
    Run.objects.filter(pk=run.pk).update(ended_at=timezone.now() - timedelta(days=400))
    assert ws.workspaces_prune(days=1) == [f"run #{run.pk}: working copy {workspace.home} ({branch}; kept on {branch})"]
    assert Workspace.objects.get(run=run).state == WorkspaceState.REMOVED
    assert git(code_repo, "rev-parse", f"refs/heads/{branch}") == workspace.kept_commit


def test_it_discards_a_finished_runs_copy(start_fix):
    run = drive(start_fix(), fixer())
    home = Path(run.workspace.home)
    assert home.is_dir()
    ws.workspace_discard(workspace=run.workspace)
    assert not home.exists()
    assert Workspace.objects.get(run=run).state == WorkspaceState.DISCARDED
    assert AuditEntry.objects.filter(action="workspace.discard", target_id=str(run.pk)).exists()
    with pytest.raises(ws.WorkspaceRefused, match="nothing to keep"):
        ws.workspace_keep(workspace=Workspace.objects.get(run=run))


def test_it_refuses_to_discard_a_paused_run_it_could_continue(start_fix):
    model = FakeModel(task=[{"text": "x", "tools": [tool("bash", command="true")]}], delay=0)
    run = start_fix()
    Run.objects.filter(pk=run.pk).update(state="paused", pause_reason="cancelled")
    run.refresh_from_db()
    Workspace.objects.filter(run=run).update(state=WorkspaceState.ACTIVE)
    with pytest.raises(ws.WorkspaceRefused, match="stop it first"):
        ws.workspace_discard(workspace=Workspace.objects.get(run=run))
    assert model.calls == 0


def test_a_resume_carries_the_copy_over_and_the_old_run_cannot_continue_on_it(start_fix):
    half = FakeModel(task=[{"text": "fix", "tools": [tool("edit", **FIX)]}, {"text": "Stopping here."}])
    first = drive(start_fix(), half)
    assert first.cause == "fulfilled"
    home = first.workspace.home
    second = services.run_resume(run=first)
    assert Workspace.objects.get(run=first).state == WorkspaceState.HANDED_OVER
    check = FakeModel(task=[{"text": "look", "tools": [tool("file_read", path="calc.py")]}, {"text": "Done."}])
    second = drive(second, check)
    workspace = Workspace.objects.get(run=second)
    assert workspace.home == home and workspace.carried_from.run_id == first.pk
    read = second.passes.get().steps.get(number=1).tool_results[0]["content"]
    assert "return sum(values) / len(values)" in read  # the next pass starts from the work
    assert workspace.branch == f"rysh/fix/{installation_key()}-run-{second.pk}"
    assert (workspace.base_ref, workspace.base_commit) == (first.workspace.base_ref, first.workspace.base_commit)
    assert workspace.stat[0]["path"] == "pkg/calc.py"  # the whole run: against the armed commit
    assert "carried over from run" in "".join(RunEvent.objects.filter(run=second).values_list("message", flat=True))
    Run.objects.filter(pk=first.pk).update(state="paused", pause_reason="cancelled", cause="")
    first.refresh_from_db()
    with pytest.raises(services.RunRefused, match=f"went to run #{second.pk}"):
        services.run_continue(run=first)


def test_it_prunes_copies_of_runs_that_ended_long_ago(start_fix, settings):
    run = drive(start_fix(), fixer())
    home = Path(run.workspace.home)
    assert ws.workspaces_prune(days=14) == []  # it just ended
    Run.objects.filter(pk=run.pk).update(ended_at=timezone.now() - timedelta(days=15))
    assert ws.workspaces_prune(days=14, dry_run=True) and home.exists()
    settings.RYSH_WORKSPACE_KEEP_DAYS = 14
    call_command("prune_workspaces")
    assert not home.exists()
    assert Workspace.objects.get(run=run).state == WorkspaceState.REMOVED


def test_auto_task_diff_prints_the_unified_diff_against_the_armed_commit(start_fix, capsys):
    run = drive(start_fix(), fixer())
    call_command("auto", "task", "diff", "fix")
    out = capsys.readouterr().out
    assert out.startswith("diff --git a/pkg/calc.py b/pkg/calc.py")
    assert "-    return sum(values) / (len(values) - 1)\n+    return sum(values) / len(values)\n" in out
    call_command("auto", "task", "diff", "--run", f"#{run.pk}", "--pass", "1")
    assert "+    return sum(values) / len(values)" in capsys.readouterr().out
    call_command("auto", "task", "keep", "fix")
    assert "kept as" in capsys.readouterr().out
    with pytest.raises(CommandError, match=f"run #{run.pk}: not discarded: its work was kept as"):
        call_command("auto", "task", "discard", "fix")


def test_it_leaves_no_process_behind_after_a_pass(start_fix):
    marker = "rysh-marker-left-behind"
    model = fixer({"text": "bg", "tools": [tool("bash", command=f"(exec -a {marker} sleep 300) & echo started")]})
    drive(start_fix(), model)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left == ""
