"""The working copy an eval case starts from (docs/evals.md, "Running a suite"): a throwaway git
repository committed from the case's files/ (empty without one), which the run's own working copy
is made from, removed once the case is graded."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from django.conf import settings

from evals.format import Case
from evals.shapes import SuiteRefused
from workspaces.source import Source

AUTHOR = ("-c", "user.name=rysh evals", "-c", "user.email=evals@rysh.invalid", "-c", "commit.gpgsign=false")


def case_copy(suite, case: Case) -> Source:
    """A throwaway git repository committed from the case's files/ (empty without one), which the
    run's working copy is made from (the agent works at its top)."""
    home = Path(settings.DATA_DIR) / "evals" / f"suite-{suite.pk}" / case.name
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    for relative, data in case.files.items():
        target = (home / relative).resolve()
        if not target.is_relative_to(home.resolve()) or ".git" in Path(relative).parts:
            raise SuiteRefused(f"{case.folder}/files/{relative}: a file outside the case's files/ folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    _git(home, "init", "-q", "-b", "main")
    _git(home, "add", "-A")
    _git(home, *AUTHOR, "commit", "-q", "--allow-empty", "--no-verify", "-m", f"eval case {case.name}: files/")
    commit = _git(home, "rev-parse", "HEAD").strip()
    return Source(
        location=str(home),
        shown=f"{case.folder}/files",
        commit=commit,
        ref="main",
        recipes_repo=False,
        note="" if case.files else f"{case.name} has no files/: its working copy starts empty",
    )


def case_copy_remove(suite_id: int, name: str) -> None:
    shutil.rmtree(Path(settings.DATA_DIR) / "evals" / f"suite-{suite_id}" / name, ignore_errors=True)


def _git(where: Path, *args: str) -> str:
    env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True, env=env)
    return done.stdout
