"""A cgroup of its own for every sandboxed command and every sandboxed stdio server
(docs/coding-loops.md, "The sandbox"): its processes (pids.max) and its memory (memory.max,
what it keeps in its folders in memory included) bounded all together, and everything in it
found and killed at the end, whatever session or process group it moved to.

Made where the worker may make one: a child of the worker's own cgroup in each hierarchy that
holds the pids or the memory controller — cgroup v1's separate hierarchies, or v2's unified one
where the worker's cgroup lets its children have them — and that the worker can write: a root
worker's, or a cgroup delegated to a normal user's worker. Where none can be made, the limits
per process (ulimit) and the sizes of the folders in memory still hold; a warning says so once.

Why a pids cgroup as root: the kernel never applies RLIMIT_NPROC to uid 0 (and root inside the
sandbox's user namespace is uid 0 outside), so a root worker gets its process limit here.

Pure: the standard library only.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
import shlex
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "rysh-sandbox-"
CONTROLLERS = ("pids", "memory")
# the joining sh and bwrap's own monitor process count against pids.max too
EXTRA_PROCESSES = 2
# limits a kernel may lack (no swap accounting, an older kernel): written where they exist
OPTIONAL = frozenset({"memory.swap.max", "memory.oom.group", "memory.memsw.limit_in_bytes"})
_serial = itertools.count()


@dataclass(frozen=True)
class Place:
    """The worker's own cgroup in one hierarchy, where a command's cgroup is made, and the
    controllers of CONTROLLERS its children get there."""

    folder: Path
    controllers: tuple[str, ...]
    unified: bool  # cgroup v2

    def limits(self, processes: int, memory: int) -> list[tuple[str, str]]:
        """(file, value) in the order they must be written (v1's memsw after the limit)."""
        files = []
        if "pids" in self.controllers:
            files.append(("pids.max", str(processes + EXTRA_PROCESSES)))
        if "memory" in self.controllers and self.unified:
            # no swap to spill into, and an OOM kill takes the whole command at once
            files += [("memory.max", str(memory)), ("memory.swap.max", "0"), ("memory.oom.group", "1")]
        elif "memory" in self.controllers:
            files += [("memory.limit_in_bytes", str(memory)), ("memory.memsw.limit_in_bytes", str(memory))]
        return files


class Cgroup:
    """One command's cgroup: a folder in each place, its limits written."""

    def __init__(self, places: Sequence[Place], *, processes: int, memory: int):
        name = f"{PREFIX}{os.getpid()}-{next(_serial)}"
        self.folders: list[tuple[Place, Path]] = []
        try:
            for place in places:
                folder = place.folder / name
                folder.mkdir()
                self.folders.append((place, folder))
                for file, value in place.limits(processes, memory):
                    _write(folder / file, value, optional=file in OPTIONAL)
        except OSError:
            self.remove()
            raise

    @property
    def controllers(self) -> set[str]:
        return {controller for place, _ in self.folders for controller in place.controllers}

    def joining(self, argv: Sequence[str]) -> list[str]:
        """argv started inside the cgroup before it can fork: an sh joins it, then execs."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(folder / 'cgroup.procs'))}" for _, folder in self.folders)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "rysh-join", *argv]

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for passing the memory limit."""
        for place, folder in self.folders:
            if "memory" in place.controllers:
                name = "memory.events" if place.unified else "memory.oom_control"
                return _counter(folder / name, "oom_kill")
        return 0

    def kill_all(self) -> None:
        """Everything in it, wherever it went: its own session, its own process group."""
        for _ in range(250):  # half a second for the killed to leave
            pids = set()
            for _, folder in self.folders:
                try:
                    pids.update(int(pid) for pid in (folder / "cgroup.procs").read_text().split())
                except OSError:
                    pass  # removed meanwhile
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)

    def remove(self) -> None:
        for _, folder in self.folders:
            for _ in range(100):  # the kernel empties it a moment after the last process is reaped
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                log.warning("could not remove the cgroup %s", folder)


class command_cgroup:
    """with command_cgroup(processes, memory_mb) as cgroup: a Cgroup, or None where the worker
    can make none (then only the limits per process and the folders' sizes hold)."""

    def __init__(self, processes: int, memory_mb: int):
        self.processes, self.memory = processes, memory_mb * 1024 * 1024
        self.cgroup: Cgroup | None = None

    def __enter__(self) -> Cgroup | None:
        found = places()
        if found:
            try:
                self.cgroup = Cgroup(found, processes=self.processes, memory=self.memory)
            except OSError as error:
                log.warning("no cgroup for a command under %s (%s)", found[0].folder, error)
        return self.cgroup

    def __exit__(self, *exc) -> None:
        if self.cgroup:
            self.cgroup.kill_all()
            self.cgroup.remove()


def server_joining(processes: int, memory_mb: int) -> list[str]:
    """The prefix that starts a long-lived program (a stdio server) in a cgroup of its own,
    named after the pid of the sh that makes it and joins it: left empty when the program
    ends, removed by the next server's start (remove_stale). Where it cannot be made the
    program starts all the same, and its stderr says so."""
    found = places()
    if not found:
        return []
    for place in found:
        remove_stale(place.folder)
    script = []
    for place in found:
        folder = shlex.quote(str(place.folder))
        limits = place.limits(processes, memory_mb * 1024 * 1024)
        needed = [f'echo {value} > "$d/{file}"' for file, value in limits if file not in OPTIONAL]
        optional = [f'echo {value} > "$d/{file}"' for file, value in limits if file in OPTIONAL]
        made = " && ".join(['mkdir "$d"', *needed, 'echo $$ > "$d/cgroup.procs"'])
        script.append(
            f"d={folder}/{PREFIX}$$; if {{ {made}; }} 2>/dev/null; then {{ {'; '.join(optional) or ':'}; }} "
            f'2>/dev/null; else rmdir "$d" 2>/dev/null; echo "rysh sandbox: no cgroup in {folder}" >&2; fi'
        )
    return ["/bin/sh", "-c", "; ".join([*script, 'exec "$@"']), "rysh-join"]


@functools.cache
def places() -> tuple[Place, ...]:
    """Where this worker makes its commands' cgroups (asked once per process); stale ones of
    dead workers and servers are removed on the way."""
    try:
        found = find_places(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError:
        found = []
    usable = [place for place in (_usable(p) for p in found) if place is not None]
    for place in usable:
        remove_stale(place.folder)
    missing = [c for c in CONTROLLERS if not any(c in place.controllers for place in usable)]
    if "memory" in missing:
        log.warning(
            "no memory cgroup can be made here: a command's memory is bounded per process "
            "(RYSH_SANDBOX_MEMORY_MB) and by the sizes of its folders in memory, not all together"
        )
    if "pids" in missing and os.geteuid() == 0:
        log.warning("no pids cgroup can be made here: commands of this root worker have no process limit")
    return tuple(usable)


def find_places(mountinfo: str, own: str) -> list[Place]:
    """This process's cgroup in every mounted hierarchy with pids or memory, from the texts of
    /proc/self/mountinfo and /proc/self/cgroup (v2: the controllers its folder offers)."""
    memberships = {}
    for line in own.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else ["<v2>"]:
            memberships[controller] = path
    found: dict[Path, Place] = {}
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        mount_root, mount_point = fields.split()[3:5]
        fstype, _, options = tail.split()[:3]
        if fstype == "cgroup":
            controllers = tuple(c for c in CONTROLLERS if c in options.split(",") and c in memberships)
            if controllers:
                folder = _under(mount_point, mount_root, memberships[controllers[0]])
                found.setdefault(folder, Place(folder, controllers, unified=False))
        elif fstype == "cgroup2" and "<v2>" in memberships:
            folder = _under(mount_point, mount_root, memberships["<v2>"])
            offered = _words(folder / "cgroup.controllers")
            controllers = tuple(c for c in CONTROLLERS if c in offered)
            if controllers:
                found.setdefault(folder, Place(folder, controllers, unified=True))
    return list(found.values())


def _usable(place: Place) -> Place | None:
    """The place as the worker may use it: writable, and on v2 with the controllers enabled for
    its children (the ones it cannot enable left out)."""
    if not os.access(place.folder, os.W_OK):
        return None
    if not place.unified:
        return place
    enabled = tuple(c for c in place.controllers if _enabled(place.folder, c))
    return Place(place.folder, enabled, unified=True) if enabled else None


def _enabled(folder: Path, controller: str) -> bool:
    """cgroup v2 gives children a controller's files only when the parent enables it for them
    (refused while the parent holds processes itself, unless it is the root)."""
    if controller in _words(folder / "cgroup.subtree_control"):
        return True
    try:
        (folder / "cgroup.subtree_control").write_text(f"+{controller}\n")
        return True
    except OSError:
        return False


def remove_stale(parent: Path) -> None:
    """Cgroups whose maker is gone: a dead worker's (`<pid>-<n>`), an ended server's (`<pid>`).
    One still in use cannot be removed anyway (the kernel refuses a cgroup with processes)."""
    for folder in parent.glob(f"{PREFIX}*"):
        match = re.fullmatch(rf"{PREFIX}(\d+)(?:-\d+)?", folder.name)
        if match and not Path(f"/proc/{match[1]}").exists():
            try:
                folder.rmdir()
            except OSError:
                pass


def _under(mount_point: str, mount_root: str, path: str) -> Path:
    return Path(mount_point) / os.path.relpath(path, mount_root)


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _write(path: Path, value: str, *, optional: bool) -> None:
    try:
        path.write_text(f"{value}\n")
    except OSError:
        if not optional:
            raise


def _counter(path: Path, key: str) -> int:
    """A `key value` line of a cgroup's counters file (memory.events, memory.oom_control)."""
    for line in _words_lines(path):
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _words_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []
