"""Which repository, at which commit, a `workdir:` recipe's copy is made from.

The commit is the head of a branch as it stands when the run is armed (docs/coding-loops.md,
"Which code a copy holds"): the newest code, not the commit where the recipe file last changed.

- A recipe of the catalogue: the recipes repository (RYSH_RECIPES_REPO, or our mirror of it),
  at the head of RYSH_RECIPES_BRANCH, or of the `base:` the recipe or the run names (a branch, a
  tag or a commit). A mirror is fetched first, as a sync does, so a commit pushed a moment ago is
  in the copy; when the remote cannot be reached, the mirror's last fetch is used and said.
- A recipe file given by path: the git repository that holds the file, at its HEAD, or at the
  `base` resolved in that repository (rysh's recipes sit in `.rysh/automations/` beside the code).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from catalogue.repo import GitRepo, RepoError, open_repo

# an abbreviated or whole commit id; any other ref is looked up only as a branch or a tag
_COMMIT_RE = re.compile(r"[0-9a-fA-F]{4,64}\Z")
MAX_REF = 250  # what Workspace.base_ref records


class SourceError(Exception):
    """No repository, no such ref or no commit to copy; the message says which and what to do."""


@dataclass(frozen=True)
class Source:
    location: str  # what git fetches from: a git directory or a checkout
    shown: str  # the location as messages may show it (no token)
    commit: str
    ref: str = ""  # the branch, tag or commit asked for, as shown ("main"; "HEAD" when detached)
    recipes_repo: bool = True  # False: the repository of a recipe file given by path
    note: str = ""  # how it was resolved when that needs saying (a remote that did not answer)

    def has_folder(self, workdir: str) -> bool:
        if workdir == ".":
            return True
        done = _git(self.location, "ls-tree", "-d", "--name-only", self.commit, "--", workdir.rstrip("/"))
        return done.returncode == 0 and done.stdout.strip() == workdir.rstrip("/")


def source_for(*, recipe_path: str, ref: str | None = None, catalogue: bool = False, fetch: bool = False) -> Source:
    """The repository and commit a run's copy comes from (see the module's doc). `catalogue`:
    the recipe is the catalogue's (the recipes repository, whatever its path says); `fetch`:
    bring a mirror up to date first (a run's arming; a recipe check reads what is there)."""
    if ref is not None and (not ref.strip() or len(ref) > MAX_REF or ref.startswith("-")):
        raise SourceError(f"expected the name of a branch, tag or commit (at most {MAX_REF} characters)")
    path = Path(recipe_path)
    if not catalogue and path.is_file():
        return _file_repo(path, ref)
    return _recipes_repo(ref, fetch=fetch)


def _file_repo(path: Path, ref: str | None) -> Source:
    top = _git(str(path.resolve().parent), "rev-parse", "--show-toplevel")
    if top.returncode:
        raise SourceError(f"{path}: not in a git repository: workdir needs the recipe in one (with a commit)")
    root = top.stdout.strip()
    if ref:
        commit = _first_commit(lambda name: _resolve_in(root, name), _candidates(ref))
        if commit is None:
            raise SourceError(f"the repository {root} has no branch, tag or commit {ref!r}")
        return Source(location=root, shown=root, commit=commit, ref=ref, recipes_repo=False)
    head = _resolve_in(root, "HEAD")
    if head is None:
        raise SourceError(f"the repository {root} has no commit yet: commit the code before a workdir run")
    branch = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    shown_ref = branch.stdout.strip() if branch.returncode == 0 else "HEAD"
    return Source(location=root, shown=root, commit=head, ref=shown_ref, recipes_repo=False)


def _recipes_repo(ref: str | None, *, fetch: bool) -> Source:
    ref = ref or settings.RYSH_RECIPES_BRANCH
    try:
        repo = open_repo(settings.RYSH_RECIPES_REPO)
        note = _fetched(repo) if fetch else ""
        commit = _first_commit(repo.resolve, _candidates(ref, remote=repo.remote))
    except RepoError as exc:
        raise SourceError(str(exc)) from None
    if commit is None:
        if ref == settings.RYSH_RECIPES_BRANCH:
            raise SourceError(f"the recipes repository {repo.shown} has no commit on {ref} yet")
        raise SourceError(f"the recipes repository {repo.shown} has no branch, tag or commit {ref!r}")
    return Source(location=str(repo.git_dir), shown=repo.shown, commit=commit, ref=ref, note=note)


def _fetched(repo: GitRepo) -> str:
    """A mirror fetched as a sync fetches it ("" when done, or for a local repository); when the
    remote does not answer, what was last fetched is used, and the note says so."""
    try:
        repo.refresh(settings.RYSH_RECIPES_BRANCH)
    except RepoError as exc:
        return f"could not fetch {repo.shown} ({exc}); the working copy starts from what was last fetched"
    return ""


def _candidates(ref: str, *, remote: bool = False) -> list[str]:
    """Where a ref is looked for, in order: a branch (the remote's first, in a mirror), a tag,
    then a commit id. Never the ref as git would take it alone, so nothing that reads as an
    option or a revision expression reaches git."""
    names = [f"refs/remotes/origin/{ref}"] if remote else []
    names += [f"refs/heads/{ref}", f"refs/tags/{ref}"]
    if _COMMIT_RE.match(ref):
        names.append(ref)
    return names


def _first_commit(resolve, names: list[str]) -> str | None:
    for name in names:
        commit = resolve(name)
        if commit:
            return commit
    return None


def _resolve_in(root: str, name: str) -> str | None:
    done = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}")
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _git(where: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", where, *args],
        capture_output=True,
        text=True,
        check=False,
        # only PATH and HOME are passed on: an inherited GIT_DIR must not point git elsewhere
        env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")},
    )
