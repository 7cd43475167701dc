"""Which code a coding run's copy holds: the head of its base (the recipes branch by default; a
recipe's `base:` or a run's `--base` pick another), resolved when the run is armed, recorded on
the run and said in the preview, on the run page and in the report, beside the recipe version."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalogue.checks import extra_issues
from catalogue.models import Recipe
from catalogue.recipe import parse_recipe
from catalogue.sync import recipes_sync
from runs import services, worker
from runs.models import Run
from runs.wiring import arm_run
from tests.api.conftest import api_as  # noqa: F401 (fixture)
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import write_recipe
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db

MORE = "import unittest\n\n\nclass More(unittest.TestCase):\n    def test_more(self):\n        self.assertTrue(True)\n"
BASED = """
    ---
    workdir: "pkg"
    base: {base}
    ---
    Make the failing test pass by fixing the code, never the test.
"""


def parse_recipe_issues(path: Path):
    """What `auto task check` adds to the reader's own errors (the checks that need the repository)."""
    return extra_issues(parse_recipe(path.read_text(), path=str(path)))


def commit_more(repo: Path, name: str = "pkg/test_more.py") -> str:
    """New code on the branch after the recipe last changed."""
    (repo / name).write_text(MORE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more code")
    return git(repo, "rev-parse", "HEAD")


def test_a_catalogue_run_starts_at_the_branch_head_not_the_recipe_version(fake_anthropic, code_repo):
    recipes_sync()
    version = Recipe.objects.get(name="fix").good.commit_sha
    head = commit_more(code_repo)
    queue = judge_or(fake_anthropic, "YES\nthe tests pass")
    queue += [{"text": "look", "tool_calls": [{"name": "bash", "input": {"command": "ls; python3 -m unittest"}}]}]
    run = services.run_start(kind="task", name_or_path="fix", args=[], provider="anthropic")
    workspace = Workspace.objects.get(run=run)
    assert (workspace.base_ref, workspace.base_commit) == ("main", head)
    assert run.recipe_version.commit_sha == version != head
    worker.execute(run.pk, arm_run)  # the real SDK against the fake Messages server
    run.refresh_from_db()
    said = run.passes.first().steps.get(number=1).tool_results[0]["content"]
    assert "test_more.py" in said and "Ran 2 tests" in said  # the newest code is in the copy
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    origin = page[page.index('id="copy-origin"') :]
    assert f"from <code>main</code> at <code>{head[:8]}</code>" in origin
    assert f"recipe version <code>{version[:8]}</code>" in origin
    report = (Path(run.output_dir) / "run-report.md").read_text()
    assert f"`main` at {head[:12]} (recipe version {version[:12]})" in report


def test_the_preview_says_which_commit_the_copy_starts_from(code_repo):
    recipes_sync()
    version = Recipe.objects.get(name="fix").good.commit_sha
    head = commit_more(code_repo)
    out = StringIO()
    call_command("auto", "task", "run", "fix", "--dry-run", stdout=out)
    line = next(line for line in out.getvalue().splitlines() if line.startswith("working copy:"))
    assert f"from main at {head[:8]} of {code_repo} (recipe version {version[:8]}), working in pkg" in line
    assert not Run.objects.exists()


def test_a_recipes_base_picks_a_branch_a_tag_or_a_commit(code_repo, start_fix):
    first = git(code_repo, "rev-parse", "HEAD")
    git(code_repo, "branch", "release")
    git(code_repo, "tag", "v1")
    commit_more(code_repo)
    for name, base in (("on-branch", "release"), ("on-tag", "v1"), ("on-commit", first[:10])):
        write_recipe(code_repo, workdir="pkg", name=name, text=BASED.replace("{base}", base))
    for name, base in (("on-branch", "release"), ("on-tag", "v1"), ("on-commit", first[:10])):
        workspace = Workspace.objects.get(run=start_fix(name))
        assert (workspace.base_ref, workspace.base_commit) == (base, first), name
    run = drive(
        Run.objects.get(name="on-branch"), FakeModel(task=[{"text": "ls", "tools": [tool("bash", command="ls")]}])
    )
    assert "test_more.py" not in run.passes.first().steps.get(number=1).tool_results[0]["content"]


def test_a_runs_base_option_comes_before_the_recipes(code_repo, start_fix):
    first = git(code_repo, "rev-parse", "HEAD")
    git(code_repo, "branch", "release")
    head = commit_more(code_repo)
    path = code_repo / ".rysh/automations/tasks/fix.md"
    out = StringIO()
    call_command("auto", "task", "run", str(path), "--base", "release", "--dry-run", stdout=out)
    assert f"from release at {first[:8]}" in out.getvalue()
    assert Workspace.objects.get(run=start_fix(base="release")).base_commit == first
    write_recipe(code_repo, workdir="pkg", name="based", text=BASED.replace("{base}", "release"))
    assert Workspace.objects.get(run=start_fix("based", base=head[:12])).base_commit == head


def test_a_base_that_names_nothing_is_refused_naming_the_ref_and_the_repository(code_repo, start_fix):
    path = write_recipe(code_repo, workdir="pkg", name="lost", text=BASED.replace("{base}", "no-such-branch"))
    with pytest.raises(
        services.RunRefused,
        match=f"lost.md:3 base: expected a branch, tag or commit: the repository {code_repo} has no branch, tag or commit 'no-such-branch'",
    ):
        start_fix("lost")
    with pytest.raises(
        services.RunRefused, match=f"task/fix: --base 'nowhere': the repository {code_repo} has no branch"
    ):
        start_fix(base="nowhere")
    with pytest.raises(CommandError, match="--base 'nowhere'"):
        call_command("auto", "task", "run", str(path.with_name("fix.md")), "--base", "nowhere", "--dry-run")
    assert not Run.objects.exists()
    # and `auto task check` says it at its line
    issues = [str(i) for i in parse_recipe_issues(path)]
    assert issues == [
        f"lost.md:3 base: expected a branch, tag or commit: the repository {code_repo} has no branch, tag or commit "
        "'no-such-branch'"
    ]
    with pytest.raises(CommandError, match="1 error"):
        call_command("auto", "task", "check", str(path))


def test_sync_marks_a_recipe_whose_base_names_nothing_invalid_at_its_line(code_repo):
    write_recipe(code_repo, workdir="pkg", name="lost", text=BASED.replace("{base}", "gone"))
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "a recipe on a branch that is not there")
    recipes_sync()
    lost = Recipe.objects.get(name="lost")
    assert lost.good is None
    assert lost.latest.errors == [
        f"lost.md:3 base: expected a branch, tag or commit: the recipes repository {code_repo} has no branch, tag or "
        "commit 'gone'"
    ]
    git(code_repo, "branch", "gone")
    assert parse_recipe_issues(code_repo / ".rysh/automations/tasks/lost.md") == []


def test_the_web_form_and_the_api_take_a_base(code_repo, api_as):  # noqa: F811
    git(code_repo, "branch", "release")
    first = git(code_repo, "rev-parse", "HEAD")
    commit_more(code_repo)
    recipes_sync()
    operator = user_with("operator")
    client = client_for(operator)
    form = client.get("/recipes/task/fix/run/").content.decode()
    assert 'name="base"' in form and "the head of the recipes branch" in form
    preview = client.post("/recipes/task/fix/run/preview/", {"base": "release"}).content.decode()
    assert f"from release at {first[:8]}" in preview
    refused = client.post("/recipes/task/fix/run/", {"base": "nowhere", "headless": "on"})
    assert refused.status_code == 400 and "--base &#x27;nowhere&#x27;" in refused.content.decode()
    api = api_as("operator", "operate")
    answer = api.post("/api/runs", {"kind": "task", "name": "fix", "base": "release", "dry_run": True})
    assert any(f"from release at {first[:8]}" in line for line in answer.json()["lines"])


def test_a_base_that_is_no_name_is_refused_before_git_sees_it(start_fix):
    for bad in ("-c", "x" * 300, "  "):
        with pytest.raises(services.RunRefused, match="expected the name of a branch, tag or commit"):
            start_fix(base=bad)
    assert not Run.objects.exists()
