"""Dependency caches that outlive a run (docs/coding-loops.md, "The project's own toolchain"): one
folder per repository under RYSH_CACHES_DIR, with pip's, npm's and Go's module caches in it.

A setup's commands get it read-write; the agent's commands get it read-only, with the same
variables set so the tools find what setup fetched (what must write, like Go's build cache,
stays in the command's private HOME under /tmp). A cache is keyed by the repository as shown
(never a token), so every run of every recipe of one repository shares it. Each use touches
its `last-used` file; retention removes a cache nobody used for RYSH_KEEP_CACHES_DAYS, never
one a run that has not finished may still use.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

MARK = "last-used"  # its mtime: when a run last used the cache
ABOUT = "repository.json"  # which repository it is for, as shown
# variable -> the folder under the cache it points at
FOLDERS = {"PIP_CACHE_DIR": "pip", "npm_config_cache": "npm", "GOMODCACHE": "go/mod"}
# setup: Go leaves its module cache writable, so retention can remove it (read-only by default)
WRITING = {"GOFLAGS": "-modcacherw"}
# the agent's commands have no network: Go says so at once instead of trying
OFFLINE = {"GOPROXY": "off"}


@dataclass(frozen=True)
class DependencyCache:
    root: Path

    @property
    def exists(self) -> bool:
        return self.root.is_dir()

    def environment(self, *, writing: bool) -> dict[str, str]:
        """The variables that point pip, npm and Go at the cache: setup's (`writing`) or the
        agent's commands'."""
        folders = {name: str(self.root / folder) for name, folder in FOLDERS.items()}
        return folders | (WRITING if writing else OFFLINE)

    def binds(self) -> list[tuple[Path, Path]]:
        """The cache at its own path: after the sandbox's tmpfs over the data folder."""
        return [(self.root, self.root)]

    def prepare(self, source: str) -> None:
        """Make the folders (a tool may refuse a cache folder that is missing) and say whose it is."""
        for folder in FOLDERS.values():
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        (self.root / ABOUT).write_text(json.dumps({"repository": source}) + "\n")
        self.touch()

    def touch(self) -> None:
        (self.root / MARK).touch()

    def last_used(self) -> datetime:
        mark = self.root / MARK
        stamp = mark.stat().st_mtime if mark.exists() else self.root.stat().st_mtime
        return datetime.fromtimestamp(stamp, tz=timezone.get_current_timezone())

    def repository(self) -> str:
        try:
            return json.loads((self.root / ABOUT).read_text())["repository"]
        except (OSError, ValueError, KeyError, TypeError):
            return ""


def cache_key(source: str) -> str:
    """A repository's folder name: readable, and unique by the repository as shown."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", source.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]
    return f"{name.strip('.-')[:40] or 'repository'}-{digest}"


def cache_for(source: str) -> DependencyCache:
    return DependencyCache(Path(settings.RYSH_CACHES_DIR) / cache_key(source))


def caches_all() -> list[DependencyCache]:
    root = Path(settings.RYSH_CACHES_DIR)
    if not root.is_dir():
        return []
    found = [DependencyCache(f) for f in root.iterdir() if f.is_dir() and not f.name.startswith(".")]
    return sorted(found, key=lambda c: c.root)


def caches_due(*, days: int | None = None, now: datetime | None = None, busy: set[str] = frozenset()) -> list:
    """The caches retention removes next: unused for more than `days` (RYSH_KEEP_CACHES_DAYS;
    0 keeps them all), and not the cache of a repository in `busy` (runs not finished)."""
    days = settings.RYSH_KEEP_CACHES_DAYS if days is None else days
    if days <= 0:
        return []
    limit = (now or timezone.now()) - timedelta(days=days)
    keep = {cache_key(source) for source in busy}
    return [c for c in caches_all() if c.root.name not in keep and c.last_used() < limit]


def caches_prune(caches: list[DependencyCache]) -> list[str]:
    said = []
    for cache in caches:
        said.append(f"dependency cache {cache.root.name} ({cache.repository() or 'unknown repository'})")
        # renamed first: a run arming meanwhile makes a fresh one rather than using half of this
        doomed = cache.root.with_name(f".pruning-{cache.root.name}-{time.monotonic_ns()}")
        try:
            cache.root.rename(doomed)
        except OSError:
            continue
        shutil.rmtree(doomed, ignore_errors=True)
    return said
