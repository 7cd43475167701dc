"""Browser profiles of web recipes: one Chromium user-data folder per `web_profile`, under the
data directory (mode 0700), so a login made once (`manage.py web_login`) is reused by every later
run; an exclusive lock file keeps two processes from ever opening one profile at once.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.browser.errors import BrowserError

PROFILE_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask; cookies live here
    return path


def profile_path(root: Path, name: str) -> Path:
    if not isinstance(name, str) or not PROFILE_NAME_RE.match(name):
        raise BrowserError(
            f"{name!r} is not a profile name (lowercase letters, digits, '.', '_' "
            "or '-', starting with a letter or digit)"
        )
    return Path(root) / name


class ProfileLock:
    """An exclusive flock on `<root>/.<name>.lock`: one browser per profile across processes.

    flock belongs to the open file, so a second BrowserTools in the same process is refused
    too, and the kernel releases it when a worker dies: no stale locks to clean up.
    """

    def __init__(self, root: Path, name: str):
        self.path = private_dir(Path(root)) / f".{name}.lock"
        self.name = name
        self.handle = None

    def acquire(self, wait_seconds: float = 0, cancelled: Callable[[], bool] = lambda: False) -> None:
        handle = open(self.path, "a+")
        os.chmod(self.path, 0o600)
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.handle = handle
                handle.seek(0)
                handle.truncate()
                handle.write(f"{os.getpid()}\n")
                handle.flush()
                return
            except BlockingIOError:
                if time.monotonic() >= deadline or cancelled():
                    handle.close()
                    raise BrowserError(
                        f"browser profile {self.name!r} is in use by another run or web_login "
                        "(one browser per profile at a time); try again when it is free"
                    ) from None
                time.sleep(0.25)

    def release(self) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None


def profile_in_use(root: Path, name: str) -> bool:
    path = Path(root) / f".{name}.lock"
    if not path.exists():
        return False
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def list_profiles(root: Path) -> list[dict[str, Any]]:
    """Name, size and last use of each profile; never anything inside it."""
    root = Path(root)
    if not root.is_dir():
        return []
    rows = []
    for path in sorted(p for p in root.iterdir() if p.is_dir() and PROFILE_NAME_RE.match(p.name)):
        files = [f for f in path.rglob("*") if f.is_file() and not f.is_symlink()]
        rows.append(
            {
                "name": path.name,
                "bytes": sum(f.stat().st_size for f in files),
                "used_at": max([path.stat().st_mtime] + [f.stat().st_mtime for f in files]),
                "in_use": profile_in_use(root, path.name),
            }
        )
    return rows


def delete_profile(root: Path, name: str) -> None:
    path = profile_path(root, name)
    if not path.is_dir():
        raise BrowserError(f"no browser profile {name!r}")
    lock = ProfileLock(root, name)
    lock.acquire(0)  # refused while a run or web_login holds it
    try:
        shutil.rmtree(path)
    finally:
        lock.release()
        lock.path.unlink(missing_ok=True)
