"""A code repository with a coding recipe in it (rysh's layout: recipes beside the code)."""

import textwrap
from pathlib import Path

import pytest

from runs import services
from tests.recipes_git import git

CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
TEST = (
    "import unittest\nfrom calc import mean\n\n\n"
    "class T(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([2, 4, 6]), 4)\n"
)
RECIPE = """
    ---
    workdir: "{workdir}"
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
      while:
        max_iterations: 2
        prompts:
          until: the tests pass and only calc.py changed
    ---
    Make the failing test pass by fixing the code, never the test.
"""
FIX = {"path": "calc.py", "old_string": "(len(values) - 1)", "new_string": "len(values)"}


@pytest.fixture
def code_repo(tmp_path, results_root):
    """tmp_path/repo: a git repository (the recipes repository of the settings) holding a
    small package with a failing test in pkg/ and a coding recipe `fix` that works there."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg/calc.py").write_text(CALC)
    (repo / "pkg/test_calc.py").write_text(TEST)
    write_recipe(repo, workdir="pkg")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code and recipe")
    return repo


def write_recipe(repo: Path, *, workdir: str, name: str = "fix", text: str = RECIPE) -> Path:
    folder = repo / ".rysh/automations/tasks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(textwrap.dedent(text.format(workdir=workdir)).lstrip())
    (folder / f"{name}.script.yaml").write_text('passes:\n  - task:\n      - text: Done.\n    judge: "YES\\nok"\n')
    return path


@pytest.fixture
def start_fix(code_repo, db):
    def start(name: str = "fix", **options):
        path = code_repo / f".rysh/automations/tasks/{name}.md"
        return services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted", **options)

    return start
