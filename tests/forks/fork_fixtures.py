"""Shared by the fork tests: a code repository with a 4-pass coding recipe, and a model whose
every pass leaves its own mark in the working copy and in the results folder, so a state
restored from pass N can be told from pass N±1 file by file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runs import services
from tests.fake_model import FakeModel, tool
from tests.recipes_git import git
from tests.workspaces.conftest import write_recipe

PASSES_RECIPE = """
    ---
    workdir: "{workdir}"
    loop:
      do:
        max_iterations: 10
        budget:
          size: 1b
      while:
        max_iterations: PASSES
        prompts:
          until: the tests pass and only calc.py changed
          iterate_with: Keep going on the same work.
    ---
    Make the failing test pass by fixing the code, never the test.
"""


def passes_recipe(passes: int) -> str:
    """A coding recipe whose loop has `passes` passes (its `{workdir}` filled by write_recipe)."""
    return PASSES_RECIPE.replace("PASSES", str(passes))


FOUR_PASSES = passes_recipe(4)


def marks(n: int) -> list[dict]:
    """Pass n's work: a line in pkg/log.txt, a file of its own, and results files."""
    return [
        {"text": f"pass {n}", "tools": [tool("bash", command=f"echo pass-{n} >> log.txt && echo {n} > only-{n}.txt")]},
        {"text": "saving", "tools": [tool("save_result", filename="notes.md", content=f"notes after pass {n}\n")]},
        {"text": "saving", "tools": [tool("save_result", filename=f"pass-{n}.md", content=f"pass {n} result\n")]},
        {"text": f"pass {n} done."},
    ]


class PerPass(FakeModel):
    """A FakeModel whose task turns are the pass's own (`marks(pass_number)`)."""

    def complete(self, request):
        if request.purpose == "task":
            self.turns["task"] = marks(request.pass_number)
        return super().complete(request)


def per_pass(judge: list[str]) -> PerPass:
    return PerPass(task=marks(1), judge=judge)


@pytest.fixture
def four_pass_recipe(code_repo):
    path = write_recipe(code_repo, workdir="pkg", name="four", text=FOUR_PASSES)
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "a four-pass coding recipe")
    return path


@pytest.fixture
def start_four(four_pass_recipe, db):
    def start(**options):
        return services.run_start(
            kind="task", name_or_path=str(four_pass_recipe), args=[], provider="scripted", **options
        )

    return start


def files_of_commit(git_dir: Path, commit: str) -> dict[str, bytes]:
    """Every file of `commit` with its bytes (read from the git directory itself)."""
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only", commit],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return {
        name.decode(): subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "blob", f"{commit}:{name.decode()}"],
            capture_output=True,
            check=True,
        ).stdout
        for name in names
        if name
    }


def files_of_tree(tree: Path) -> dict[str, bytes]:
    """Every file under `tree` with its bytes, but the .git mount point."""
    found = {}
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        found[str(rel)] = path.read_bytes()
    return found


def files_of_folder(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
