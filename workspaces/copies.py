"""A run's own working copy, in git plumbing (no Django models; paths in, facts out).

A copy is a folder `home` holding two things:

- `home/tree`: the working tree, the agent's. Commands run in it, read-write, in the sandbox.
- `home/git`: its git directory, ours. The sandbox mounts it read-only at `tree/.git`, so
  `git status` and `git diff` work inside while the agent can change neither the config nor
  the hooks nor the refs. With the sandbox off (an admin's choice) `tree/.git` is a gitfile
  naming it instead, so git works in the agent's commands there too. Our own git calls always
  name both (`--git-dir`, `--work-tree`), so nothing the agent writes into the tree (a `.git`
  of its own, `.gitattributes`) can make our git run a program: filters, diff drivers and
  fsmonitor live in config, which is ours.

The copy is made with its own object store (`fetch` of the one commit, no hard links), so
nothing done inside can reach the recipes repository's objects, branches or checkout.

Submodules are never ours to follow: no call recurses into one, every diff ignores them, and a
`.gitmodules` in the tree (which git dies on reading when it names `update = !command`) is
never read. A git repository inside the tree — one the agent made, or a submodule it filled —
is no part of the work: git could only record it as a link to one of its commits, which no diff
shows and no keep carries, so every gitlink stays as the run's start commit has it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from catalogue.repo import GIT_ENV_DROP

# never a program of the tree's choosing, whatever .gitattributes says; never a submodule's
# config read (.gitmodules), nor a submodule followed
_SAFE = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.external="]
_SAFE += ["-c", "diff.ignoreSubmodules=all", "-c", "submodule.recurse=false"]
_SAFE += ["-c", "fetch.recurseSubmodules=false", "-c", "push.recurseSubmodules=no"]
_NO_SUBMODULES = "--ignore-submodules=all"  # else git reads .gitmodules for each one's own setting
GITLINK = "160000"
PATCH_LIMIT = 4 * 1024 * 1024  # characters of a diff read for a page at most
# caches that tools leave behind when they run, and what a recipe's setup installs (a virtualenv,
# node_modules), never the work: left out of every diff and keep (info/exclude, on top of the
# repository's own .gitignore; a file the repository tracks there still shows)
CACHES = (
    *("__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".hypothesis/"),
    *("node_modules/", ".venv/", "venv/", ".tox/", ".nox/", "*.egg-info/", ".eggs/"),
)


class CopyError(Exception):
    """The copy could not be made or read; the message says what git said."""


class BranchMoved(CopyError):
    """A non-forced push refused: the branch there is not an ancestor of what was pushed."""


@dataclass(frozen=True)
class Copy:
    home: Path

    @property
    def tree(self) -> Path:
        return self.home / "tree"

    @property
    def git_dir(self) -> Path:
        return self.home / "git"

    @property
    def exists(self) -> bool:
        return self.git_dir.is_dir() and self.tree.is_dir()


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int | None  # None: a binary file
    removed: int | None
    status: str = "M"  # A | M | D | R

    @property
    def binary(self) -> bool:
        return self.added is None

    def row(self) -> dict:
        """As stored on Workspace.stat and WorkspacePass.stat."""
        return {"path": self.path, "added": self.added, "removed": self.removed, "status": self.status}


def git(copy: Copy, *args: str, env: dict | None = None, input: str | None = None, ok=(0,)) -> str:
    done = run_git(copy, *args, env=env, input=input)
    if done.returncode not in ok:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise CopyError(f"git {args[0]} failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout


def run_git(copy: Copy, *args: str, env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """git on the copy, whatever its exit status (`git` raises on an unexpected one)."""
    full = {
        k: v for k, v in os.environ.items() if k not in GIT_ENV_DROP
    }  # an inherited GIT_DIR would point git elsewhere
    full.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", **(env or {}))
    try:
        return subprocess.run(
            ["git", f"--git-dir={copy.git_dir}", f"--work-tree={copy.tree}", *_SAFE, *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=full,
            input=input,
            check=False,
        )
    except OSError as exc:
        raise CopyError(f"cannot run git: {exc}") from None


def create(home: Path, *, source: Path, commit: str, branch: str) -> Copy:
    """A fresh copy of `source` (a git directory or a checkout) at `commit`, on `branch`."""
    copy = Copy(Path(home))
    if copy.exists:
        return copy  # a worker that died after making it: the copy is the run's already
    partial = Path(tempfile.mkdtemp(prefix=".making-", dir=_made_parent(copy.home)))
    draft = Copy(partial)
    try:
        _run(["git", "init", "-q", "--bare", str(draft.git_dir)])
        git(draft, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(source), commit)
        draft.tree.mkdir()
        git(draft, "checkout", "-q", "-b", branch, commit)
        # the tree's path is the copy's, once renamed: the sandbox shows it where it lies
        for key, value in (("core.bare", "false"), ("core.worktree", str(copy.tree)), ("gc.auto", "0")):
            git(draft, "config", key, value)
        (draft.git_dir / "info").mkdir(exist_ok=True)
        (draft.git_dir / "info/exclude").write_text("# caches, never the work (rysh)\n" + "\n".join(CACHES) + "\n")
        (draft.tree / ".git").mkdir()  # where the sandbox mounts the git directory, read-only
        os.rename(partial, copy.home)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return copy


def _made_parent(home: Path) -> Path:
    home.parent.mkdir(parents=True, exist_ok=True)
    return home.parent


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise CopyError(f"{command[0]} {command[1]} failed: {done.stderr.strip() or done.returncode}")


def prepare_git(copy: Copy, *, sandboxed: bool) -> None:
    """`tree/.git` as the agent's commands need it: the sandbox's mount point, or without the
    sandbox a gitfile naming the copy's git directory (made again each time a worker takes the
    copy: whatever a command left there is replaced)."""
    if sandboxed:
        ensure_mount_point(copy)
    else:
        link_git(copy)


def ensure_mount_point(copy: Copy) -> None:
    """`tree/.git` must be an empty folder for the sandbox to mount the git directory on: an
    agent's command cannot remove it (it is a mount point inside), a file tool refuses it."""
    mount = copy.tree / ".git"
    _clear_unless_folder(mount)
    if mount.is_dir() and any(mount.iterdir()):
        shutil.rmtree(mount)
    mount.mkdir(exist_ok=True)


def link_git(copy: Copy) -> None:
    """`tree/.git` as a gitfile (`gitdir: …`): git run anywhere in the tree finds the copy's git
    directory, whose core.worktree is the tree. Only without the sandbox, whose commands may
    write there anyway."""
    link = copy.tree / ".git"
    _clear_unless_folder(link)
    if link.is_dir():
        shutil.rmtree(link)
    link.write_text(f"gitdir: {copy.git_dir}\n")


def _clear_unless_folder(path: Path) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()


def snapshot(copy: Copy, *, base: str = "HEAD") -> str:
    """The tree as it stands now (untracked files included, .gitignore'd ones not), written
    as a git tree object on a throwaway index: the copy's own index and HEAD are not moved.
    Its gitlinks are `base`'s (the run's start commit): a repository inside the tree is no
    part of the work."""
    with tempfile.TemporaryDirectory(prefix="rysh-index-") as tmp:
        index = Path(tmp) / "index"
        own = copy.git_dir / "index"
        if own.exists():
            shutil.copyfile(own, index)  # its stat cache: only changed files are read
        env = {"GIT_INDEX_FILE": str(index)}
        git(copy, "add", "-A", "--", ".", env=env)
        _gitlinks_as_in(copy, base, env)
        return git(copy, "write-tree", env=env).strip()


def _gitlinks_as_in(copy: Copy, base: str, env: dict) -> None:
    """Every gitlink of the index put back as `base` has it: a new one (`git add -A` of a
    folder holding its own .git) goes, one that moved comes back."""
    raw = git(copy, "diff-index", "--cached", "--raw", "-z", "--no-renames", "--ignore-submodules=none", base, env=env)
    items = raw.split("\0")
    moved = [
        path for meta, path in zip(items[::2], items[1::2], strict=False) if GITLINK in meta.lstrip(":").split()[:2]
    ]
    if moved:
        literal = {**env, "GIT_LITERAL_PATHSPECS": "1"}
        pathspecs = "\0".join(moved)
        git(copy, "reset", "-q", base, "--pathspec-from-file=-", "--pathspec-file-nul", env=literal, input=pathspecs)


def tree_of(copy: Copy, commit: str) -> str:
    return git(copy, "rev-parse", f"{commit}^{{tree}}").strip()


def stat(copy: Copy, old: str, new: str) -> list[FileStat]:
    """What changed between two trees (or commits): one FileStat a file, renames found."""
    raw = git(copy, "diff", "--no-ext-diff", "--no-textconv", _NO_SUBMODULES, "-M", "--numstat", "-z", old, new)
    kinds = _statuses(copy, old, new)
    found, items = [], iter(raw.split("\0"))
    for entry in items:
        if not entry:
            continue
        added, removed, path = entry.split("\t", 2)
        if path == "":  # a rename: the old path, then the new
            _old, path = next(items, ""), next(items, "")
        binary = added == "-"
        found.append(
            FileStat(
                path=path,
                added=None if binary else int(added),
                removed=None if binary else int(removed),
                status=kinds.get(path, "M"),
            )
        )
    return found


def _statuses(copy: Copy, old: str, new: str) -> dict[str, str]:
    raw = git(copy, "diff", "--no-ext-diff", _NO_SUBMODULES, "-M", "--name-status", "-z", old, new)
    found, items = {}, iter(raw.split("\0"))
    for status in items:
        if not status:
            continue
        path = next(items, "")
        if status.startswith(("R", "C")):
            path = next(items, "")
        found[path] = status[0]
    return found


def patch(copy: Copy, old: str, new: str, *, binary: bool = False, paths: tuple[str, ...] = ()) -> str:
    """The unified diff between two trees; `binary` for a patch `git apply` can take whole."""
    args = ["diff", "--no-ext-diff", "--no-textconv", _NO_SUBMODULES, "--no-color", "-M"]
    args.append("--full-index" if binary else "-U3")
    if binary:
        args.append("--binary")
    return git(copy, *args, old, new, "--", *paths)


def commit(copy: Copy, *, branch: str, message: str, name: str, email: str, base: str = "HEAD") -> str:
    """Commit the tree as it stands on `branch` (its tip the parent; gitlinks as `base` has
    them); the copy's own index is reset to it so `git status` inside shows a clean tree.
    Returns the commit, or the tip when nothing changed since it."""
    tree = snapshot(copy, base=base)
    tip = git(copy, "rev-parse", f"refs/heads/{branch}").strip()
    if tree == tree_of(copy, tip):
        return tip
    identity = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name}
    identity["GIT_COMMITTER_EMAIL"] = email
    sha = git(copy, "commit-tree", tree, "-p", tip, env=identity, input=message).strip()
    git(copy, "update-ref", f"refs/heads/{branch}", sha, tip)
    git(copy, "reset", "-q")
    return sha


def point(copy: Copy, *, tree: str, parent: str, ref: str, message: str, name: str, email: str) -> str:
    """`tree` as a commit on `parent`, named by the hidden `ref` (refs/rysh/…, never a branch):
    a pass's restorable point. No branch, index or HEAD of the copy moves."""
    identity = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name}
    identity["GIT_COMMITTER_EMAIL"] = email
    sha = git(copy, "commit-tree", tree, "-p", parent, env=identity, input=message).strip()
    git(copy, "update-ref", ref, sha)
    return sha


def has_commit(copy: Copy, sha: str) -> bool:
    """The copy's git directory holds commit `sha` (False when the copy is gone)."""
    if not sha or not copy.git_dir.is_dir():
        return False
    done = run_git(copy, "cat-file", "-t", sha)
    return done.returncode == 0 and done.stdout.strip() == "commit"


def rename_branch(copy: Copy, old: str, new: str) -> None:
    """A resumed run takes the copy over on a branch named after it."""
    if old != new:
        git(copy, "branch", "-m", old, new)


def valid_branch(name: str) -> bool:
    """A name git takes for a branch (`git check-ref-format --branch`), and no option."""
    if not name or name.startswith("-"):
        return False
    done = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, check=False)
    return done.returncode == 0


def branch_tips(copy: Copy, destination: str | Path, branch: str) -> dict[str, str]:
    """The branches of another repository named `branch` or starting with it (`…-2`), with
    their commits: what a keep may not overwrite, and which names are free."""
    out = git(copy, "ls-remote", "--heads", "--", str(destination), f"refs/heads/{branch}*")
    return parse_heads(out)


def parse_heads(listing: str) -> dict[str, str]:
    """`git ls-remote` lines (`<sha>\trefs/heads/<name>`) as {name: sha}."""
    tips = {}
    for line in listing.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.startswith("refs/heads/"):
            tips[ref.removeprefix("refs/heads/")] = sha
    return tips


def contains(copy: Copy, ancestor: str, commit: str) -> bool:
    """`ancestor` is in `commit`'s history. A commit the copy does not have never is: the copy
    holds the whole history it was made from, and everything made in it."""
    known = run_git(copy, "cat-file", "-t", ancestor)
    if known.returncode or known.stdout.strip() != "commit":
        return False
    return run_git(copy, "merge-base", "--is-ancestor", ancestor, commit).returncode == 0


def push(copy: Copy, *, commit: str, destination: str | Path, branch: str) -> None:
    """`commit` to another repository's `branch` (a git directory or a checkout), never forced:
    the branch is made, or moved forward; anything else is refused (BranchMoved)."""
    done = run_git(copy, "push", "--porcelain", "--", str(destination), f"{commit}:refs/heads/{branch}")
    if done.returncode == 0:
        return
    if rejected(done):
        raise BranchMoved(f"{branch} in {destination} holds commits this work does not (it moved meanwhile)")
    said = (done.stderr or done.stdout).strip().splitlines()
    raise CopyError(f"git push failed: {said[-1] if said else f'exit {done.returncode}'}")


def rejected(done: subprocess.CompletedProcess) -> bool:
    """A push git refused as not a fast-forward (it says so on either stream)."""
    said = done.stdout + done.stderr
    return "[rejected]" in said or "non-fast-forward" in said or "fetch first" in said


def remove(copy: Copy) -> None:
    if copy.home.exists():
        shutil.rmtree(copy.home)
