"""`workdir:` (docs/coding-loops.md): its shape in the reader, and the folder in the repository at its line."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import given
from hypothesis import strategies as st

from catalogue.checks import extra_issues
from catalogue.recipe import RecipeError, parse_recipe
from tests.recipes_git import git
from tests.workspaces.conftest import code_repo, write_recipe  # noqa: F401 (fixture)

TASK = ".rysh/automations/tasks/fix.md"
WEB = ".rysh/automations/webs/fix.md"


def errors(text: str, path: str = TASK) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=path)
    return [str(issue) for issue in caught.value.issues]


@pytest.mark.parametrize(
    ("given", "normal"), [(".", "."), ("./", "."), ("pkg", "pkg"), ("pkg/sub/", "pkg/sub"), ("a/../b", "b")]
)
def test_it_reads_a_folder_of_the_repository(given, normal):
    spec = parse_recipe(f'---\nworkdir: "{given}"\n---\nFix it.\n', path=TASK)
    assert (spec.workdir, spec.workdir_line) == (normal, 2)


def test_a_recipe_without_workdir_is_as_before():
    assert parse_recipe("Fix it.", path=TASK).workdir is None


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ('"/srv/code"', "fix.md:3 workdir: expected a folder relative to the repository's root"),
        ('"~/code"', "an absolute path"),
        ('"../elsewhere"', "climbs out of the repository with '..'"),
        ('"pkg/../../x"', "climbs out of the repository"),
        ('".git"', "git's own folder"),
        ('""', 'expected a folder of the repository, relative to its root ("." for the root)'),
        ("[a, b]", "expected a folder of the repository"),
        ("3", "expected a folder of the repository"),
    ],
)
def test_it_refuses_a_workdir_that_is_not_a_folder_inside_the_repository(given, said):
    found = errors(f"---\ndescription: x\nworkdir: {given}\n---\nFix it.\n")
    assert len(found) == 1 and said in found[0] and found[0].startswith("fix.md:3 workdir:")


def test_a_web_recipe_has_no_workdir():
    found = errors('---\nworkdir: "."\n---\nPublish.\n', path=WEB)
    assert found == [
        "fix.md:2 workdir: applies to task and code recipes only (a web recipe drives a browser, not a working copy)"
    ]


def test_an_unknown_key_near_workdir_names_it():
    assert "'workdir'" in errors('---\nworkdr: "."\n---\nx\n')[0]


@given(st.lists(st.sampled_from(["..", ".", "a", "b", "", "/", "~"]), min_size=1, max_size=6))
def test_an_accepted_workdir_never_leaves_the_repository(parts):
    text = "/".join(parts)
    try:
        spec = parse_recipe(f"---\nworkdir: '{text}'\n---\nx\n", path=TASK)
    except RecipeError:
        return
    assert not spec.workdir.startswith(("/", "..")) and spec.workdir != ".git"


@pytest.mark.django_db
def test_check_names_the_line_of_a_folder_the_repository_does_not_have(code_repo):
    path = write_recipe(code_repo, workdir="nowhere", name="lost")
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "lost")
    issues = [str(i) for i in extra_issues(parse_recipe(path.read_text(), path=str(path)))]
    assert len(issues) == 1
    assert issues[0].startswith("lost.md:2 workdir: expected \".\" or a folder of the repository, got 'nowhere'")
    with pytest.raises(CommandError, match="1 error"):
        call_command("auto", "task", "check", str(path))
    good = write_recipe(code_repo, workdir="pkg", name="fix")
    assert extra_issues(parse_recipe(good.read_text(), path=str(good))) == []


@pytest.mark.django_db
def test_check_refuses_a_repository_with_no_commit(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    path = write_recipe(repo, workdir=".", name="fix")
    issues = [str(i) for i in extra_issues(parse_recipe(path.read_text(), path=str(path)))]
    assert issues == [
        f"fix.md:2 workdir: the repository {repo} has no commit yet: commit the code before a workdir run"
    ]


@pytest.mark.django_db
def test_auto_check_accepts_a_rysh_coding_recipe_with_its_tools_in_approve(code_repo, capsys):
    text = (
        '---\nworkdir: "."\napprove: [bash, "bash(git push:*)", edit]\n---\nImplement, test, vet; repeat until green.\n'
    )
    path = code_repo / ".rysh/automations/tasks/green.md"
    path.write_text(text)
    call_command("auto", "task", "check", str(path))
    out = capsys.readouterr().out
    assert "ok: task/green is valid" in out and "never holds anything" not in out


# --- base:, setup:, until_command: (coding loops) ----------------------------------------------


def test_it_reads_the_keys_of_a_coding_loop():
    spec = parse_recipe(
        '---\nworkdir: "."\nbase: release/2.1\nsetup:\n  - python -m venv .venv\n  - .venv/bin/pip install -e .\n'
        "until_command: .venv/bin/python -m pytest -q\n---\nFix it.\n",
        path=TASK,
    )
    assert (spec.base, spec.base_line) == ("release/2.1", 3)
    assert spec.setup == ("python -m venv .venv", ".venv/bin/pip install -e .")
    assert spec.until_command == ".venv/bin/python -m pytest -q"


def test_a_recipe_without_them_is_as_before():
    spec = parse_recipe('---\nworkdir: "."\n---\nFix it.\n', path=TASK)
    assert (spec.base, spec.setup, spec.until_command) == (None, (), None)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("base: -x", "fix.md:3 base: expected a branch, tag or commit of the repository"),
        ("base: a..b", "fix.md:3 base: expected a branch, tag or commit"),
        ("base: 'main branch'", "fix.md:3 base: expected a branch, tag or commit"),
        ("setup: pip install -e .", "fix.md:3 setup: expected a list of commands (strings)"),
        ("setup: [1]", "fix.md:3 setup: expected a command (a non-empty string), got 1"),
        ("setup: []", "fix.md:3 setup: expected at least one command"),
        ("until_command: ''", "fix.md:3 until_command: expected a shell command (a non-empty string)"),
        ("until_command: [pytest]", "fix.md:3 until_command: expected a shell command"),
    ],
)
def test_it_refuses_a_bad_value_at_its_line(line, said):
    found = errors(f'---\nworkdir: "."\n{line}\n---\nFix it.\n')
    assert len(found) == 1 and found[0].startswith(said), found


@pytest.mark.parametrize("key", ["base: main", "setup: [make deps]", "until_command: make test"])
def test_they_need_a_working_copy(key):
    found = errors(f"---\ndescription: x\n{key}\n---\nFix it.\n")
    name = key.split(":")[0]
    assert found == [f"fix.md:3 {name}: applies to coding loops only: add workdir: (the folder the agent works in)"]


def test_a_web_recipe_has_none_of_them():
    found = errors("---\nuntil_command: make test\n---\nPublish.\n", path=WEB)
    assert found == [
        "fix.md:2 until_command: applies to task and code recipes only (a web recipe drives a browser, not a working copy)"
    ]
