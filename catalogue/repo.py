"""Git, through the `git` command: read recipe files at a commit, walk history, commit edits.

Two kinds of location, both named by RYSH_RECIPES_REPO:

- a local path (a working clone or a bare repository): read and written in place. Writes are
  plumbing only (`hash-object`, `update-index` on a throwaway GIT_INDEX_FILE, `write-tree`,
  `commit-tree`, `update-ref` with the old value), so a checkout someone is working in is never
  touched: no files, no index, no HEAD.
- a clone URL: a bare clone kept under DATA_DIR/repos, fetched before every read. The remote
  is the truth: the tracked branch follows it, and our own commits reach it by `git push`
  (never forced), so a concurrent push elsewhere makes ours fail instead of vanish.

No Django models here; settings only for DATA_DIR. Every git call gets its identity on the
command line (`-c user.name=… -c user.email=…`), never from a global config.

A token in an http(s) location (`https://user:token@host/…`) never reaches git's argv (which
any local user reads in /proc while git runs) nor the mirror's config: git is given the URL
without it, and the secret through the environment of git alone (readable only by our own
user), handed over by a one-line credential helper that names the variables, not the values.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from django.conf import settings

RECIPES_DIR = ".rysh/automations"
RECIPE_PATH_RE = re.compile(r"\.rysh/automations/(webs|tasks|codes)/([^/]+)\.md\Z")
ZERO = "0" * 40
_URL_RE = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\s]+@[^/\s]+:", re.IGNORECASE)
# `scheme://userinfo@` anywhere in a text (a location, git's stderr); the userinfo stops at the
# first `/`, whitespace or quote, and runs to the last `@` before it (an unencoded `@` in a token).
_USERINFO_RE = re.compile(r"([a-z][a-z0-9+.-]*://)([^/\s'\"<>]*)@", re.IGNORECASE)
# A clean environment: an inherited GIT_DIR or GIT_INDEX_FILE would point git elsewhere.
GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)


# The credential helper git runs for http(s) (`!…` is run by the shell, with the action as $1):
# for a `get` of our host it answers with the username and password from the environment
# git was started with; `store` and `erase` do nothing. Only the variables' names are in argv.
_HELPER = (
    '!f() { test "$1" = get || return 0; h=; '
    'while read -r l; do case "$l" in host=*) h="${l#host=}";; esac; done; '
    'test "$h" = "$RYSH_GIT_HOST" || return 0; '
    "printf 'username=%s\\n' \"$RYSH_GIT_USERNAME\"; "
    'test -z "${RYSH_GIT_PASSWORD+set}" || printf \'password=%s\\n\' "$RYSH_GIT_PASSWORD"; }; f'
)
# `credential.helper=` first empties the list: a global helper (`store`) is never asked, and
# never told to save our token in ~/.git-credentials.
_HELPER_CONFIG = ("-c", "credential.helper=", "-c", f"credential.helper={_HELPER}")


class RepoError(Exception):
    """The repository cannot be read or written; the message says what git said."""


class PushRejected(RepoError):
    """The remote refused a non-forced push: its branch moved since we fetched."""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def config(self) -> list[str]:
        return ["-c", f"user.name={self.name}", "-c", f"user.email={self.email}"]

    def env(self, role: str) -> dict[str, str]:
        return {f"GIT_{role}_NAME": self.name, f"GIT_{role}_EMAIL": self.email}


@dataclass(frozen=True)
class Change:
    status: str  # A | M | D (renames are reported as D + A)
    path: str
    blob: str  # the new blob; ZERO when deleted


@dataclass(frozen=True)
class Commit:
    sha: str
    author_name: str
    author_email: str
    date: datetime
    message: str
    changes: tuple[Change, ...]

    @property
    def author(self) -> str:
        return f"{self.author_name} <{self.author_email}>"


@dataclass(frozen=True)
class Merge:
    sha: str | None  # the commit the target branch should move to; None on conflict
    fast_forward: bool
    conflicts: tuple[str, ...] = ()


def redact(text: str) -> str:
    """`text` with the userinfo of every URL in it hidden (`https://user:token@host/…` ->
    `https://***@host/…`): what a location or git's output may show, log or put in an error.
    Git itself is always given the real location."""
    return _USERINFO_RE.sub(r"\1***@", text)


@dataclass(frozen=True)
class Credential:
    """The userinfo of an http(s) location, for git's credential helper (never its argv)."""

    host: str  # host[:port], as git's credential protocol names it
    username: str
    password: str | None

    def env(self) -> dict[str, str]:
        env = {"RYSH_GIT_HOST": self.host, "RYSH_GIT_USERNAME": self.username}
        if self.password is not None:
            env["RYSH_GIT_PASSWORD"] = self.password
        return env


def split_credential(location: str) -> tuple[str, Credential | None]:
    """(the location without its userinfo, the userinfo) for an http(s) URL that has one; the
    location as is otherwise (a path, ssh, `git@host:path`: their user is no secret, and ssh
    takes no credential helper)."""
    parts = urlsplit(location)
    if parts.scheme.lower() not in ("http", "https") or "@" not in parts.netloc:
        return location, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    username, has_password, password = userinfo.partition(":")
    credential = Credential(host=host, username=unquote(username), password=unquote(password) if has_password else None)
    return urlunsplit(parts._replace(netloc=host)), credential


def reopen_location(stored: str, configured: str) -> str:
    """What to open for a location stored redacted (`https://***@host/…`): the configured one
    when it is the same repository (its token comes from the settings, never the database),
    else the stored text as it is."""
    return configured if redact(configured) == stored else stored


def is_remote(location: str) -> bool:
    """A clone URL (`https://…`, `file://…`, `git@host:path`) rather than a local path."""
    return bool(_URL_RE.match(location)) and not Path(location).exists()


def recipe_path(kind_folder: str, name: str) -> str:
    return f"{RECIPES_DIR}/{kind_folder}/{name}.md"


def split_recipe_path(path: str) -> tuple[str, str] | None:
    """(`webs`|`tasks`|`codes`, name) for a recipe file path, None for anything else in the folder."""
    match = RECIPE_PATH_RE.match(path)
    return (match[1], match[2]) if match else None


def open_repo(location: str, *, data_dir: str | os.PathLike | None = None) -> GitRepo:
    if not is_remote(location):
        path = Path(location)
        if not path.is_dir():
            raise RepoError(f"{redact(location)}: no such directory")
        repo = GitRepo(location=location, git_dir=path, remote=False)
        # A plain folder inside some other checkout must not be read as that checkout.
        done = repo.git("rev-parse", "--absolute-git-dir", ok=(0, 128))
        if done.returncode:
            raise RepoError(f"{redact(location)} is not a git repository")
        return repo
    if data_dir is None:
        data_dir = settings.DATA_DIR
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", location.rstrip("/").rsplit("/", 1)[-1])[:40]
    digest = hashlib.sha256(location.encode()).hexdigest()[:10]
    mirror = Path(data_dir) / "repos" / f"{slug}-{digest}.git"
    repo = GitRepo(location=location, git_dir=mirror, remote=True)
    if not mirror.exists():
        repo._clone()
    else:
        repo._forget_token()
    return repo


class RepoWrites:
    """The writing side of a GitRepo (commits made without a checkout, published by compare-and-
    swap, merges); it runs git through the GitRepo it is mixed into."""

    def write_tree(self, base: str, files: dict[str, str | None]) -> str:
        """The tree of `base` with `files` replaced (None deletes), built on a throwaway index."""
        with tempfile.TemporaryDirectory(prefix="rysh-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.git("read-tree", base, env=env)
            lines = []
            for path, text in files.items():
                if text is None:
                    lines.append(f"0 {ZERO}\t{path}")
                else:
                    blob = self.out("hash-object", "-w", "--stdin", input=text).strip()
                    lines.append(f"100644 {blob}\t{path}")
            if lines:
                self.git("update-index", "--index-info", input="\n".join(lines) + "\n", env=env)
            return self.out("write-tree", env=env).strip()

    def commit_tree(
        self, tree: str, parents: list[str], message: str, *, author: Identity, committer: Identity | None = None
    ) -> str:
        committer = committer or author
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.out(
            *committer.config(), *args, input=message, env={**author.env("AUTHOR"), **committer.env("COMMITTER")}
        ).strip()

    def set_ref(self, branch: str, new: str, old: str | None) -> bool:
        """Compare-and-swap a branch (old None: it must not exist yet). False when it moved."""
        done = self.git("update-ref", f"refs/heads/{branch}", new, old or ZERO, ok=(0, 1, 128))
        return done.returncode == 0

    def publish(self, branch: str, new: str, old: str | None) -> None:
        """Move `branch` from `old` to `new` here and, for a remote, there: a non-forced push,
        so a branch that moved elsewhere since our fetch is refused (PushRejected)."""
        with self.lock():
            if self.remote:
                done = self.git(
                    "push", "--quiet", "--porcelain", "origin", f"{new}:refs/heads/{branch}", ok=(0, 1, 128)
                )
                if done.returncode:
                    rejected = "rejected" in done.stdout or "fetch first" in done.stderr
                    said = (self._scrub(done.stderr).strip().splitlines() or ["push failed"])[-1]
                    raise (PushRejected if rejected else RepoError)(f"push to {self.shown} {branch} failed: {said}")
                self.git("update-ref", f"refs/remotes/origin/{branch}", new)
                self.git("update-ref", f"refs/heads/{branch}", new)
                return
            if not self.set_ref(branch, new, old):
                raise PushRejected(f"{branch} moved in {self.shown} while we were writing")

    def merge(self, *, target: str, tip: str, message: str, author: Identity, committer: Identity) -> Merge:
        """Merge `tip` into `target` without a checkout: a fast-forward when `target` is an
        ancestor, else `git merge-tree --write-tree` and a two-parent commit."""
        if self.is_ancestor(target, tip):
            return Merge(sha=tip, fast_forward=True)
        if self.is_ancestor(tip, target):
            return Merge(sha=target, fast_forward=True)  # already in: nothing to do
        done = self.git("merge-tree", "--write-tree", "--name-only", "-z", target, tip, ok=(0, 1))
        parts = done.stdout.split("\0")
        if done.returncode == 1:
            conflicts = []
            for part in parts[1:]:
                if not part:
                    break
                conflicts.append(part)
            return Merge(sha=None, fast_forward=False, conflicts=tuple(dict.fromkeys(conflicts)))
        tree = parts[0].strip()
        sha = self.commit_tree(tree, [target, tip], message, author=author, committer=committer)
        return Merge(sha=sha, fast_forward=False)


@dataclass
class GitRepo(RepoWrites):
    location: str
    git_dir: Path
    remote: bool
    blobs_read: int = 0  # how many file contents this object has read (the bench checks it)

    @property
    def shown(self) -> str:
        """The location as messages may show it: without a token in the URL."""
        return redact(self.location)

    @property
    def url(self) -> str:
        """The location as git is given it: without the userinfo of an http(s) URL."""
        return split_credential(self.location)[0]

    def _credential_args(self) -> tuple[str, ...]:
        """The helper that hands git the token, for a remote whose location has one."""
        return _HELPER_CONFIG if self.remote and split_credential(self.location)[1] else ()

    def _scrub(self, text: str) -> str:
        """Git's output made fit for an error: URLs redacted, and the location's secret itself
        wherever git echoed it some other way (quoted, or percent-decoded)."""
        text = redact(text)
        found = _USERINFO_RE.match(self.location)
        secret = found[2].split(":", 1)[-1] if found else ""
        for form in {secret, unquote(secret)}:
            if len(form) >= 4:  # shorter is no token, and would blot out ordinary words
                text = text.replace(form, "***")
        return text

    def _env(self, extra: dict | None = None) -> dict[str, str]:
        """A clean environment; the ceiling stops git from looking above the repository for one
        (a plain folder inside another checkout is not that checkout; see open_repo)."""
        env = {k: v for k, v in os.environ.items() if k not in GIT_ENV_DROP}
        env.update(
            GIT_TERMINAL_PROMPT="0",
            LC_ALL="C",
            GIT_CEILING_DIRECTORIES=str(Path(self.git_dir).resolve().parent),
            **self._credential_env(),
            **(extra or {}),
        )
        return env

    def _credential_env(self) -> dict[str, str]:
        credential = split_credential(self.location)[1] if self.remote else None
        return credential.env() if credential else {}

    # --- running git -------------------------------------------------------------------------

    def git(
        self, *args: str, input: str | None = None, env: dict | None = None, ok: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess:
        full_env = self._env(env)
        try:
            done = subprocess.run(
                ["git", "-C", str(self.git_dir), "-c", "core.quotePath=false", *self._credential_args(), *args],
                input=input,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=full_env,
                check=False,
            )
        except OSError as exc:
            raise RepoError(f"cannot run git: {exc}") from None
        if done.returncode not in ok:
            said = self._scrub(done.stderr or done.stdout).strip().splitlines()
            raise RepoError(f"git {args[0]} failed in {self.shown}: {said[-1] if said else f'exit {done.returncode}'}")
        return done

    def out(self, *args: str, **kwargs) -> str:
        return self.git(*args, **kwargs).stdout

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Serialises our own writers on one machine (fetches, ref moves); git's own ref locks
        would otherwise make the loser of a race fail with "cannot lock ref"."""
        lock_path = Path(f"{self.git_dir}.rysh-lock") if self.remote else None
        if lock_path is None:
            yield
            return
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # --- the mirror of a remote --------------------------------------------------------------

    def _clone(self) -> None:
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.lock():
            if self.git_dir.exists():  # another process cloned it while we waited
                return
            tmp = Path(tempfile.mkdtemp(prefix=".clone-", dir=self.git_dir.parent))
            try:
                done = subprocess.run(
                    ["git", *self._credential_args(), "clone", "--bare", "--quiet", self.url, str(tmp / "r.git")],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **self._credential_env()},
                )
                if done.returncode:
                    raise RepoError(f"cannot clone {self.shown}: {self._scrub(done.stderr).strip()}")
                os.rename(tmp / "r.git", self.git_dir)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        self.git("config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
        self.git("config", "remote.origin.mirror", "false")

    def _forget_token(self) -> None:
        """A mirror cloned before tokens left the URL keeps one in its config: take it out
        (the next fetch or push authenticates through the helper)."""
        if not split_credential(self.location)[1]:
            return
        with contextlib.suppress(OSError):
            if f"url = {self.url}\n" in (self.git_dir / "config").read_text():
                return
        with self.lock():
            self.git("config", "remote.origin.url", self.url)

    def refresh(self, branch: str) -> None:
        """Remote: fetch, then move our copy of the branch to the remote's (the remote is the
        truth; a rewritten history is followed, and sync notices it). Local: nothing to do."""
        if not self.remote:
            return
        with self.lock():
            self.git("fetch", "--quiet", "--prune", "origin")
            theirs = self.resolve(f"refs/remotes/origin/{branch}")
            if theirs and theirs != self.resolve(f"refs/heads/{branch}"):
                self.git("update-ref", f"refs/heads/{branch}", theirs)

    # --- reading -----------------------------------------------------------------------------

    def resolve(self, ref: str) -> str | None:
        done = self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok=(0, 1, 128))
        return (done.stdout.strip() or None) if done.returncode == 0 else None

    def head(self, branch: str) -> str:
        sha = self.resolve(f"refs/heads/{branch}")
        if sha is None:
            raise RepoError(f"{self.shown} has no branch {branch!r}")
        return sha

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        done = self.git("merge-base", "--is-ancestor", ancestor, descendant, ok=(0, 1, 128))
        return done.returncode == 0

    def has_commit(self, sha: str) -> bool:
        return self.git("cat-file", "-e", f"{sha}^{{commit}}", ok=(0, 1, 128)).returncode == 0

    def log(self, since: str | None, head: str) -> list[Commit]:
        """Commits on the branch's first-parent line, oldest first, that touched recipes, each
        with its changes against its first parent (a merge shows what it brought in)."""
        revs = f"{since}..{head}" if since else head
        raw = self.out(
            "log",
            "-z",
            "--reverse",
            "--first-parent",
            "--diff-merges=first-parent",
            "--no-renames",
            "--raw",
            "--no-abbrev",
            "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%B%x1f",
            revs,
            "--",
            RECIPES_DIR,
        )
        return [_parse_commit(record) for record in raw.split("\x1e")[1:]]

    def commit(self, sha: str) -> Commit:
        """One commit's author, date and message (its changes left out)."""
        raw = self.out("show", "-s", "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%B%x1f", sha)
        return _parse_commit(raw.split("\x1e", 1)[1])

    def changes(self, since: str | None, head: str) -> list[Change]:
        """What differs between two commits (the whole tree as additions when `since` is None)."""
        if since is None:
            return [Change("A", path, blob) for path, blob in self.tree(head).items()]
        raw = self.out("diff", "-z", "--raw", "--no-renames", "--no-abbrev", since, head, "--", RECIPES_DIR)
        return list(_parse_raw(raw.split("\0")))

    def tree(self, sha: str, under: str = RECIPES_DIR) -> dict[str, str]:
        """path -> blob of every file under .rysh/automations (or the folder `under`) at a
        commit (no contents read)."""
        raw = self.out("ls-tree", "-r", "-z", "--full-tree", sha, "--", under)
        files = {}
        for entry in filter(None, raw.split("\0")):
            meta, path = entry.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind == "blob":
                files[path] = blob
        return files

    def read_blobs(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """Contents of many blobs with one `git cat-file --batch`."""
        wanted = list(dict.fromkeys(b for b in blobs if b and b != ZERO))
        if not wanted:
            return {}
        try:
            done = subprocess.run(
                ["git", "-C", str(self.git_dir), "cat-file", "--batch"],
                input="\n".join(wanted).encode() + b"\n",
                capture_output=True,
                check=True,
                env=self._env(),
            )
        except (OSError, subprocess.CalledProcessError) as exc:
            raise RepoError(f"cannot read files from {self.shown}: {self._scrub(str(exc))}") from None
        found, data, at = {}, done.stdout, 0
        for blob in wanted:
            end = data.index(b"\n", at)
            header = data[at:end].decode().split()
            if len(header) < 3 or header[1] == "missing":
                raise RepoError(f"{self.shown}: object {blob} is missing")
            size = int(header[2])
            found[blob] = data[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
        self.blobs_read += len(found)
        return found

    def read_file(self, sha: str, path: str) -> str | None:
        """A file's text at a commit, None when it does not exist there."""
        done = self.git("cat-file", "blob", f"{sha}:{path}", ok=(0, 128))
        if done.returncode:
            return None
        self.blobs_read += 1
        return done.stdout


def _parse_commit(record: str) -> Commit:
    fields = record.split("\x1f")
    sha, name, email, date = fields[:4]
    message = "\x1f".join(fields[4:-1]).strip()
    changes = tuple(_parse_raw(fields[-1].lstrip("\0\n").split("\0")))
    return Commit(
        sha=sha,
        author_name=name,
        author_email=email,
        date=datetime.fromisoformat(date),
        message=message,
        changes=changes,
    )


def _parse_raw(tokens: list[str]) -> Iterator[Change]:
    """`:oldmode newmode oldblob newblob STATUS` NUL `path` NUL, repeated."""
    items = iter(tokens)
    for meta in items:
        if not meta.startswith(":"):
            continue
        path = next(items, "")
        _, new_mode, _, new_blob, status = meta[1:].split()
        if new_mode.startswith("16") or new_mode == "120000":
            continue  # submodules and symlinks are not recipe files
        status = status[0]
        if status in ("A", "M", "D", "T"):
            yield Change("M" if status == "T" else status, path, new_blob)
