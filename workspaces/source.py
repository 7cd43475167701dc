"""Which repository, at which commit, a `workdir:` recipe's copy is made from.

A recipe from the catalogue: the recipes repository (RYSH_RECIPES_REPO, or our mirror of it)
at the commit of the version that runs. A recipe file given by path: the git repository that
holds the file, at its HEAD (rysh's recipes sit in `.rysh/automations/` beside the code).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from catalogue.repo import RepoError, open_repo


class SourceError(Exception):
    """No repository or no commit to copy; the message says which and what to do."""


@dataclass(frozen=True)
class Source:
    location: str  # what git fetches from: a git directory or a checkout
    shown: str  # the location as messages may show it (no token)
    commit: str

    def has_folder(self, workdir: str) -> bool:
        if workdir == ".":
            return True
        done = _git(self.location, "ls-tree", "-d", "--name-only", self.commit, "--", workdir.rstrip("/"))
        return done.returncode == 0 and done.stdout.strip() == workdir.rstrip("/")


def source_for(*, recipe_path: str, commit: str | None = None) -> Source:
    """The repository and commit a run's copy comes from (see the module's doc)."""
    if commit:
        return _recipes_repo(commit)
    path = Path(recipe_path)
    if path.is_file():
        top = _git(str(path.resolve().parent), "rev-parse", "--show-toplevel")
        if top.returncode:
            raise SourceError(f"{path}: not in a git repository: workdir needs the recipe in one (with a commit)")
        root = top.stdout.strip()
        head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        if head.returncode:
            raise SourceError(f"the repository {root} has no commit yet: commit the code before a workdir run")
        return Source(location=root, shown=root, commit=head.stdout.strip())
    return _recipes_repo(None)


def _recipes_repo(commit: str | None) -> Source:
    try:
        repo = open_repo(settings.RYSH_RECIPES_REPO)
        if commit is None:
            commit = repo.resolve(f"refs/heads/{settings.RYSH_RECIPES_BRANCH}")
            if commit is None:
                raise SourceError(
                    f"the recipes repository {repo.shown} has no commit on {settings.RYSH_RECIPES_BRANCH} yet"
                )
        elif not repo.has_commit(commit):
            raise SourceError(f"the recipes repository {repo.shown} has no commit {commit[:12]} (was it rewritten?)")
    except RepoError as exc:
        raise SourceError(str(exc)) from None
    return Source(location=str(repo.git_dir), shown=repo.shown, commit=commit)


def _git(where: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", where, *args],
        capture_output=True,
        text=True,
        check=False,
        # only PATH and HOME are passed on: an inherited GIT_DIR must not point git elsewhere
        env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")},
    )
