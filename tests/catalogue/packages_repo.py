"""A recipes repository holding rysh's agent package test-fixer (tests/fixtures/packages) beside a
small Python package with a failing test, for the package sync, page and run tests."""

import shutil
from pathlib import Path

import pytest

from catalogue.sync import recipes_sync
from tests.recipes_git import git
from tests.workspaces.conftest import CALC, TEST

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/packages/test-fixer"


class PackagesRepo:
    def __init__(self, path: Path):
        self.path = path
        self.package = path / ".rysh/packages/test-fixer"

    def commit(self, message: str, files: dict[str, str | None] | None = None) -> str:
        """Write (or with None, delete) files of the package folder, commit, sync."""
        for inner, text in (files or {}).items():
            target = self.package / inner
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)
        recipes_sync()
        return git(self.path, "rev-parse", "HEAD")


@pytest.fixture
def packages_repo(tmp_path, results_root, db):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg/calc.py").write_text(CALC)
    (repo / "pkg/test_calc.py").write_text(TEST)
    shutil.copytree(FIXTURE, repo / ".rysh/packages/test-fixer")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code and the test-fixer agent")
    recipes_sync()
    return PackagesRepo(repo)
