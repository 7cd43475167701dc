"""Where Keep sends a run's work: the repository its copy came from (docs/coding-loops.md).

A recipe file's own repository, or the recipes repository (RYSH_RECIPES_REPO): in place when it
is a path, through our mirror to the remote when it is a clone URL. Every push is a plain `git
push` (never forced): a branch is made, or moved forward; a branch that holds other work is
never overwritten (BranchMoved).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from catalogue.repo import GitRepo, RepoError, open_repo, redact, reopen_location
from workspaces import copies
from workspaces.copies import BranchMoved, Copy
from workspaces.models import Workspace


@dataclass(frozen=True)
class Destination:
    shown: str  # as messages and pages show it (no token)
    location: str  # a path git pushes to, or "" through the mirror
    mirror: GitRepo | None = None  # the recipes repository's mirror when it is a remote

    def tips(self, copy: Copy, branch: str) -> dict[str, str]:
        """Its branches named `branch` or starting with it, with their commits."""
        if self.mirror is None:
            return copies.branch_tips(copy, self.location, branch)
        listing = self.mirror.out("ls-remote", "--heads", "origin", f"refs/heads/{branch}*")
        return copies.parse_heads(listing)

    def push(self, copy: Copy, *, commit: str, branch: str) -> None:
        if self.mirror is None:
            copies.push(copy, commit=commit, destination=self.location, branch=branch)
            return
        repo = self.mirror
        with repo.lock():
            repo.git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(copy.git_dir), commit)
            done = repo.git("push", "--porcelain", "origin", f"{commit}:refs/heads/{branch}", ok=(0, 1, 128))
            if copies.rejected(done):
                raise BranchMoved(f"{branch} in {self.shown} holds commits this work does not (it moved meanwhile)")
            if done.returncode:
                said = redact(done.stderr or done.stdout).strip().splitlines()
                raise RepoError(f"push to {self.shown} failed: {said[-1] if said else done.returncode}")
            repo.git("update-ref", f"refs/remotes/origin/{branch}", commit)

    def fetch_hint(self, branch: str) -> str:
        return f"git fetch {self.shown} {branch}"

    def delete_hint(self, branch: str) -> str:
        if self.mirror is None:
            return f"git -C {self.shown} branch -D {branch}"
        return f"git push {self.shown} --delete {branch}"


def destination_of(workspace: Workspace) -> Destination:
    """The repository the copy was made from: its recipe file's, or the recipes repository."""
    if workspace.source_path:
        return Destination(shown=workspace.source_path, location=workspace.source_path)
    repo = open_repo(reopen_location(workspace.source, settings.RYSH_RECIPES_REPO))
    if repo.remote:
        return Destination(shown=repo.shown, location="", mirror=repo)
    return Destination(shown=repo.shown, location=str(Path(repo.git_dir)))
