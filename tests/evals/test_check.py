"""`auto <kind> check NAME|PATH` reports the recipe's eval cases (docs/evals.md): each with what
it asserts, broken ones with their file:line errors and `args` naming a placeholder the recipe
lacks refused, exiting as a recipe error does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.recipes_git import git

pytestmark = pytest.mark.django_db  # the quotas in force are read from the database

ROOT = Path(__file__).resolve().parents[2]
RECIPE = """
    ---
    description: Fix what the goal says.
    args: [goal]
    loop:
      do:
        budget:
          size: 40p
      while:
        max_iterations: 2
        budget: 80p
        prompts:
          until: the goal "{{goal}}" is met
    ---
    Work toward {{goal}} in {{workdir}}.
"""


@pytest.fixture
def repo(tmp_path, settings):
    root = tmp_path / "repo"
    codes = root / ".rysh/automations/codes"
    codes.mkdir(parents=True)
    (codes / "fix.md").write_text(textwrap.dedent(RECIPE).lstrip())
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a code recipe")  # its workdir needs the recipe in a repository
    settings.RYSH_RECIPES_REPO = str(root)
    return root


def case(root: Path, name: str, **files: str) -> None:
    folder = root / ".rysh/automations/codes/fix/evals" / name
    for rel, text in files.items():
        target = folder / rel.replace("__", "/").replace("_md", ".md").replace("_yaml", ".yaml")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def check(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("auto", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_lists_each_good_case_with_what_it_asserts(repo):
    case(
        repo,
        "green",
        task_md="---\nargs:\n  goal: green tests\n---\nMake it green.",
        expect_yaml="files_changed: [src/**]\nmax_tokens: 9000\n",
        judge_md="Is it green?",
    )
    case(repo, "plain", task_md="---\nargs: {goal: x}\n---\nDo x.", expect_yaml="")
    out, err = check("code", "check", "fix")
    assert out.endswith(
        "eval cases: 2\n"
        "  - green: ok (files_changed, max_tokens; judge.md)\n"
        "  - plain: ok (no assertions)\n"
        "ok: code/fix is valid\n"
    )
    assert err == ""


def test_it_says_nothing_of_cases_a_recipe_does_not_have(repo):
    out, _ = check("code", "check", "fix")
    assert "eval cases" not in out and out.endswith("ok: code/fix is valid\n")


def test_it_refuses_broken_cases_and_unknown_args_at_their_file_and_line(repo):
    case(
        repo,
        "bad-regex",
        task_md="---\nargs:\n  goal: g\n---\nDo.",
        expect_yaml="output_matches:\n  - ok\n  - '(oops'\n",
    )
    case(repo, "bad-args", task_md="---\nargs:\n  goal: g\n  colour: red\n---\nDo.", expect_yaml="")
    case(repo, "no-args", task_md="Do.", expect_yaml="")
    case(repo, "no-expect", task_md="---\nargs: {goal: g}\n---\nDo.")
    case(repo, "empty-judge", task_md="---\nargs: {goal: g}\n---\nDo.", expect_yaml="", judge_md="\n")
    case(repo, "fine", task_md="---\nargs: {goal: g}\n---\nDo.", expect_yaml="max_tokens: 10\n")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="5 error\\(s\\) in the eval cases of fix"):
        call_command("auto", "code", "check", "fix", stdout=out, stderr=err)
    folder = ".rysh/automations/codes/fix/evals"
    assert err.getvalue().splitlines() == [
        f"{folder}/bad-args/task.md: args.colour: code/fix has no argument 'colour' (its arguments: goal)",
        f"{folder}/bad-regex/expect.yaml:3: output_matches: '(oops': not a regular expression: "
        "missing ), unterminated subpattern at position 0",
        f"{folder}/empty-judge/judge.md: judge.md is empty: delete it or write a rubric",
        f"{folder}/no-args/task.md: args: no value for code/fix's argument 'goal': add `goal: …` under args:",
        f"{folder}/no-expect/expect.yaml: missing: every case needs a task.md (the task) and an expect.yaml "
        "(the assertions)",
    ]
    assert "  - fine: ok (max_tokens)" in out.getvalue()
    assert "  - bad-args: 1 error(s)" in out.getvalue()
    assert "ok: code/fix is valid" not in out.getvalue()


def test_a_files_tree_on_a_recipe_without_a_working_copy_is_a_warning(repo):
    tasks = repo / ".rysh/automations/tasks"
    tasks.mkdir()
    (tasks / "report.md").write_text("Write the report.\n")
    folder = tasks / "report/evals/one"
    (folder / "files").mkdir(parents=True)
    (folder / "task.md").write_text("Report on it.")
    (folder / "expect.yaml").write_text("")
    (folder / "files/data.csv").write_text("a,b\n")
    out, _ = check("task", "check", "report")
    assert (
        "  - .rysh/automations/tasks/report/evals/one/files: task/report has no working copy (no workdir:), "
        "so the case's files are not used"
    ) in out
    assert out.endswith("ok: task/report is valid\n")


def test_the_command_exits_as_for_a_recipe_error(repo, tmp_path):
    case(repo, "broken", task_md="Do.")
    done = subprocess.run(
        [sys.executable, "manage.py", "auto", "code", "check", str(repo / ".rysh/automations/codes/fix.md")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "RYSH_RECIPES_REPO": str(repo), "DATA_DIR": str(tmp_path / "data")},
    )
    assert done.returncode == 1, done.stderr
    assert "codes/fix/evals/broken/expect.yaml: missing" in done.stderr
    assert "error(s) in the eval cases of" in done.stderr
