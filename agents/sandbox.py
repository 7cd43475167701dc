"""Every shell command of a coding agent runs here: in a bubblewrap sandbox (docs/coding-loops.md).

Inside, the working copy is the only writable place the host lends (a setup's dependency caches
aside, docs/coding-loops.md): the rest of the file system is
mounted read-only, `/run` (the UNIX sockets of PostgreSQL, Redis, docker…), `/tmp`, HOME and the
folders the caller hides (the data folder, the worker's HOME) are empty tmpfs, and the command gets
its own user, PID, IPC, UTS, cgroup and network namespaces — no network at all, only a loopback of
its own — and no capabilities. The environment is cleared to PATH, LANG, HOME and TERM (and what the
caller adds: a setup's proxy, the dependency caches' folders): never a key, a database URL or a
RYSH_ setting. Limits on memory, processes and file size per process are set by a small sh
wrapper inside the sandbox (not a preexec_fn: the worker has threads); the folders in memory
(/tmp, /dev/shm, /run) each have a size; a cgroup per command (agents/cgroups.py, where the
worker can make one) bounds its processes and its memory all together, files in memory
included; the working copy is watched as it grows; output is capped; and a timeout or a cancel
kills bwrap's whole process group; with its PID namespace gone, nothing the command started
survives it. Without the sandbox, the command's whole session and its cgroup are killed.

Pure: the standard library only; the caller passes the settings in a SandboxConfig.
"""

from __future__ import annotations

import functools
import logging
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.cgroups import Cgroup, command_cgroup, server_joining

log = logging.getLogger(__name__)

HOME = "/tmp/home"
LANG = "C.UTF-8"
TERM = "dumb"
CHUNK = 64 * 1024
DRAIN_SECONDS = 1.0  # after the command ended, how long an escaped holder of its pipes may keep them
PROBE_SECONDS = 10.0
MB = 1024 * 1024
# of a command's memory (memory_mb), what each folder in memory may hold: /tmp (HOME in it) half,
# /dev/shm a quarter, /run a sixteenth; a hidden folder is read-only, with only mount points in it
TMP_SHARE, SHM_SHARE, RUN_SHARE = 2, 4, 16
HIDDEN_BYTES = MB
WATCH_SPACING = 4  # a measurement of the working copy waits four times as long as the last took
HINT_OFF = "or, knowing that commands then run unconfined, an admin may set RYSH_SANDBOX=off"


@dataclass(frozen=True)
class SandboxConfig:
    enabled: bool = True  # False: an admin set RYSH_SANDBOX=off; commands run as plain subprocesses
    # a command's memory: all its processes and its files in memory together (a memory cgroup,
    # where one can be made), each process's address space (ulimit -v), and the folders' sizes
    memory_mb: int = 4096
    processes: int = 512  # processes (ulimit -u, and a pids cgroup where one can be made)
    file_size_mb: int = 1024  # largest file a command may write (ulimit -f)
    workspace_mb: int | None = 2048  # the working copy on disk: past this the command is ended
    output_bytes: int = 100 * MB  # stdout + stderr past this: the command is killed
    keep_bytes: int = 32 * 1024  # of each stream, the first and the last keep_bytes are kept
    path: str = "/usr/local/bin:/usr/bin:/bin"
    hidden: tuple[str, ...] = ()  # folders the sandbox sees empty (data folder, the worker's HOME)
    bwrap: str = "bwrap"


@dataclass(frozen=True)
class CommandResult:
    exit_status: int | None  # None when killed; 128 + N when the command died of signal N
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    seconds: float
    killed: str | None = None
    sandboxed: bool = True

    def text(self) -> str:
        """What the model reads: the status, then each stream that printed something, labelled."""
        lines = [f"killed: {self.killed}" if self.killed else f"exit status: {self.exit_status}"]
        if not self.sandboxed:
            lines.append("note: ran without the sandbox (an admin turned it off)")
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if text:
                lines += [f"<{name}>", text.removesuffix("\n"), f"</{name}>"]
        if not (self.stdout or self.stderr):
            lines.append("(no output)")
        return "\n".join(lines)


class SandboxUnavailable(Exception):
    """Commands cannot run sandboxed here; the message says why and what to do."""


@functools.cache
def sandbox_problem(config: SandboxConfig) -> str | None:
    """Why commands cannot run sandboxed on this machine, or None (also None when the sandbox is
    turned off: nothing then stands in the way). Starts bwrap once per config and process;
    `sandbox_problem.cache_clear()` forgets the answers."""
    if not config.enabled:
        return None
    executable = shutil.which(config.bwrap)
    if executable is None:
        return (
            f"bubblewrap is not installed ({config.bwrap!r} not found): install it "
            f"(apt-get install bubblewrap; `make install` does), {HINT_OFF}"
        )
    argv = [executable, *_ISOLATION, "--ro-bind", "/", "/", *_memory_folders(config), "--clearenv", "--", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_SECONDS, env={})
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap ({executable}) could not start: {error}; {HINT_OFF}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
    if "--size" in said:
        return f"bubblewrap ({executable}) is too old: it has no --size (0.5.0 or later has; `bwrap --version`); {HINT_OFF}"
    return (
        f"bubblewrap cannot make a sandbox here: {said}. It needs user namespaces: "
        "sysctl kernel.unprivileged_userns_clone=1 (Debian), "
        "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap (Ubuntu), "
        f"and a container that allows them; {HINT_OFF}"
    )


# No capabilities: bwrap started by root would otherwise hand root's to the command, and with
# CAP_SYS_ADMIN in its own namespaces it could simply unmount the tmpfs over a hidden folder.
_ISOLATION = ("--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--die-with-parent", "--new-session")


class Sandbox:
    def __init__(
        self,
        root: str | Path,
        *,
        config: SandboxConfig,
        readonly: Sequence[tuple[str | Path, str | Path]] = (),
        writable: Sequence[tuple[str | Path, str | Path]] = (),
        environment: Mapping[str, str] | None = None,
    ):
        """root: the working copy, the only writable place the host lends unless `writable` names
        more (a setup's dependency caches). readonly, writable: (source, destination) pairs mounted
        after root (so they may lie under a hidden folder), e.g. the copy's git directory at
        <root>/.git. environment: variables a command gets besides PATH, LANG, HOME and TERM."""
        self.given_root = Path(root).absolute()
        self.root = self.given_root.resolve()
        self.config = config
        self.readonly = [(Path(source).resolve(), self._inside(destination)) for source, destination in readonly]
        self.writable = [(Path(source).resolve(), self._inside(destination)) for source, destination in writable]
        self.environment = dict(environment or {})
        self.copy_size = _CopySize(self.root, config.workspace_mb)

    def _inside(self, destination: str | Path) -> Path:
        """A destination under root as given keeps its place under root's real path."""
        path = self.given_root / destination
        return self.root / path.relative_to(self.given_root) if path.is_relative_to(self.given_root) else path

    def run(
        self,
        command: str,
        *,
        cwd: str | Path,
        timeout: float,
        cancelled: Callable[[], str | None] = lambda: None,
        poll: float = 0.25,
    ) -> CommandResult:
        """Run `command` with bash -c (sh without bash) in cwd, which must lie inside root."""
        folder = self._folder(cwd)
        if self.config.enabled and (problem := sandbox_problem(self.config)):
            raise SandboxUnavailable(problem)
        with command_cgroup(self.config.processes, self.config.memory_mb) as cgroup:
            watch = _Watch(self.config, cancelled, cgroup, self.copy_size)
            if self.config.enabled:
                return self._run_sandboxed(command, folder, timeout, watch, poll, cgroup)
            with tempfile.TemporaryDirectory(prefix="rysh-home-", ignore_cleanup_errors=True) as home:
                env = _environment(self.config, home) | self.environment
                argv = _joining(cgroup, ["/bin/sh", "-c", _limits(self.config), *_shell(self.config, command)])
                return _execute(argv, self.config, timeout, watch, poll, cgroup, cwd=folder, env=env)

    def _folder(self, cwd: str | Path) -> Path:
        folder = (self.given_root / cwd).resolve()
        if not folder.is_relative_to(self.root):
            raise ValueError(f"the command's folder {cwd} is outside the working copy {self.root}")
        if not folder.is_dir():
            raise ValueError(f"the command's folder {cwd} is not a folder of the working copy")
        return folder

    def _run_sandboxed(self, command, folder, timeout, watch, poll, cgroup) -> CommandResult:
        status_read, status_write = os.pipe()
        try:
            argv = _joining(cgroup, self._bwrap_argv(command, folder, status_write))
            result = _execute(argv, self.config, timeout, watch, poll, cgroup, pass_fds=(status_write,), env={})
        except OSError as error:
            raise SandboxUnavailable(f"bubblewrap could not start: {error}; {HINT_OFF}") from error
        finally:
            os.close(status_write)
            status = _read_all(status_read)
        # bwrap reports an exit code only when the sandbox was set up and the command started.
        if result.killed is None and '"exit-code"' not in status:
            said = result.stderr.strip() or f"exit status {result.exit_status}"
            raise SandboxUnavailable(f"bubblewrap could not set up the sandbox: {said}")
        return result

    def _bwrap_argv(self, command: str, folder: Path, status_fd: int) -> list[str]:
        config = self.config
        argv = [shutil.which(config.bwrap) or config.bwrap, *_ISOLATION, "--json-status-fd", str(status_fd)]
        argv += ["--ro-bind", "/", "/", *_memory_folders(config), "--dir", HOME]
        hidden = _existing_folders(config.hidden)
        argv += _hiding(hidden)
        argv += ["--bind", str(self.root), str(self.root)]
        for source, destination in self.writable:
            argv += ["--bind", str(source), str(destination)]
        for source, destination in self.readonly:
            argv += ["--ro-bind", str(source), str(destination)]
        argv += _read_only_after_binds(hidden)
        argv += ["--clearenv"]
        for name, value in (_environment(config, HOME) | self.environment).items():
            argv += ["--setenv", name, value]
        argv += ["--chdir", str(folder), "--", "/bin/sh", "-c", _limits(config), *_shell(config, command)]
        return argv


def _existing_folders(paths: Sequence[str]) -> list[Path]:
    """Hidden folders that exist (bwrap cannot mount over a missing one in a read-only tree),
    outer ones first: a folder hidden inside another (the data folder in the project's) is
    mounted over in the one that hides it."""
    found = [Path(path).resolve() for path in paths if Path(path).resolve().is_dir()]
    return sorted(dict.fromkeys(found), key=lambda path: len(path.parts))


def _memory_folders(config: SandboxConfig) -> list[str]:
    """/dev (bwrap's own, with /dev/shm a sized tmpfs of its own), /proc, /run and /tmp: every
    folder in memory a program can write has a size, their sum within the command's memory."""
    memory = config.memory_mb * MB
    argv = ["--dev", "/dev", *_tmpfs("/dev/shm", memory // SHM_SHARE), "--proc", "/proc"]
    return argv + [*_tmpfs("/run", memory // RUN_SHARE), *_tmpfs("/tmp", memory // TMP_SHARE)]


def _tmpfs(folder: str | Path, size: int) -> list[str]:
    return ["--size", str(size), "--tmpfs", str(folder)]


def _hiding(hidden: Sequence[Path]) -> list[str]:
    return [word for folder in hidden for word in _tmpfs(folder, HIDDEN_BYTES)]


def _read_only_after_binds(hidden: Sequence[Path]) -> list[str]:
    """After the binds, which may need mount points made inside them: the hidden folders, and
    /dev itself (its tmpfs has no size bwrap can set; its devices and /dev/shm stay usable)."""
    return [word for folder in [*hidden, Path("/dev")] for word in ("--remount-ro", str(folder))]


def _environment(config: SandboxConfig, home: str) -> dict[str, str]:
    return {"PATH": config.path, "LANG": LANG, "HOME": home, "TERM": TERM}


def _shell(config: SandboxConfig, command: str) -> list[str]:
    """$0 and $1 of the limits wrapper: the shell to exec and the command it runs. Found on the
    host: the sandbox sees the same files outside /tmp."""
    return [shutil.which("bash", path=config.path) or "/bin/sh", command]


def _limits(config: SandboxConfig) -> str:
    """The sh wrapper that sets the limits, then execs the shell. POSIX sh counts -f in 512-byte
    blocks and -v in KiB; dash names the process limit -p, bash and busybox -u."""
    memory_kb = _within_hard(resource.RLIMIT_AS, config.memory_mb * MB) // 1024
    file_blocks = _within_hard(resource.RLIMIT_FSIZE, config.file_size_mb * MB) // 512
    processes = _within_hard(resource.RLIMIT_NPROC, config.processes)
    return (
        f"ulimit -c 0 2>/dev/null; ulimit -v {memory_kb} && ulimit -f {file_blocks} && "
        f"{{ ulimit -u {processes} 2>/dev/null || ulimit -p {processes}; }} || "
        '{ echo "rysh sandbox: cannot set the limits" >&2; exit 126; }; exec "$0" -c "$1"'
    )


def _within_hard(limit: int, wanted: int) -> int:
    """A hard limit already lower than wanted stays (nobody may raise it, and it is stricter)."""
    hard = resource.getrlimit(limit)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def _execute(argv, config, timeout, watch: _Watch, poll, cgroup, **popen) -> CommandResult:
    """Start argv leading its own process group, collect its output, kill the group when needed."""
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **popen
    )
    streams = {proc.stdout: _Kept(config.keep_bytes), proc.stderr: _Kept(config.keep_bytes)}
    try:
        killed = _collect(proc, streams, config, started + timeout, timeout, watch, poll, cgroup)
    except BaseException:
        _end(proc, config, cgroup, session=True)  # whatever is left
        raise
    finally:
        _kill_group(proc)  # what was started between the end and now
        proc.wait()
        if cgroup:
            cgroup.kill_all()
        for pipe in streams:
            pipe.close()
    killed = killed or watch.after_end()
    out, err = streams.values()
    status = None if killed else (proc.returncode if proc.returncode >= 0 else 128 - proc.returncode)
    return CommandResult(
        exit_status=status,
        stdout=out.text(),
        stderr=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        seconds=round(time.monotonic() - started, 3),
        killed=killed,
        sandboxed=config.enabled,
    )


def _collect(proc, streams, config, deadline, timeout, watch, poll, cgroup) -> str | None:
    """Read both streams until the command has ended and they closed; return why the command was
    killed, or None."""
    selector = selectors.DefaultSelector()
    for pipe in streams:
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ)
    killed, next_poll, drain_until = None, time.monotonic() + poll, None
    with selector:
        while True:
            now = time.monotonic()
            if killed is None:
                killed = _why_kill(now, deadline, timeout, next_poll, watch, streams, config)
                next_poll = now + poll if now >= next_poll else next_poll
                if killed:
                    _end(proc, config, cgroup, session=False)
            if drain_until is None and proc.poll() is not None:
                # It ended; its pipes close unless something it started (unsandboxed) holds them.
                _end(proc, config, cgroup, session=True)
                drain_until = now + DRAIN_SECONDS
            if drain_until is not None and (now >= drain_until or not selector.get_map()):
                return killed
            wait = poll if killed else min(poll, next_poll - now, deadline - now)
            _wait_for_output(proc, selector, streams, max(0.0, wait))


def _end(proc: subprocess.Popen, config: SandboxConfig, cgroup: Cgroup | None, *, session: bool) -> None:
    """Kill what is left of the command: its process group, without the sandbox its session
    too (a job in a group of its own, `set -m`; once it ended: a look through every process),
    and everything in its cgroup."""
    _kill_group(proc)
    if session and not config.enabled:
        _kill_session(proc.pid)
    if cgroup:
        cgroup.kill_all()


def _wait_for_output(proc, selector, streams, wait: float) -> None:
    if not selector.get_map():  # the command closed both streams and still runs
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            pass
        return
    for key, _ in selector.select(wait):
        _read_into(key.fileobj, streams[key.fileobj], selector)


def _why_kill(now, deadline, timeout, next_poll, watch: _Watch, streams, config) -> str | None:
    if now >= deadline:
        return f"timed out after {_duration(timeout)}"
    if sum(kept.total for kept in streams.values()) > config.output_bytes:
        return f"output limit ({_size(config.output_bytes)}) passed"
    if now >= next_poll:
        return watch.tick(now)
    return None


class _Watch:
    """What a command is checked for at every poll tick: a cancel, a process the kernel killed
    for passing the command's memory, a working copy grown past its size."""

    def __init__(
        self, config: SandboxConfig, cancelled: Callable[[], str | None], cgroup: Cgroup | None, copy: _CopySize
    ):
        self.config, self.cancelled, self.cgroup, self.copy = config, cancelled, cgroup, copy

    def tick(self, now: float) -> str | None:
        return self.cancelled() or self._memory() or self.copy.past(now)

    def after_end(self) -> str | None:
        """A command that ended before a tick saw it: its OOM kill, its copy past the size."""
        return self._memory() or self.copy.past(time.monotonic())

    def _memory(self) -> str | None:
        if self.cgroup is None or not self.cgroup.oom_kills():
            return None
        return (
            f"memory limit passed: the command's processes and its files in /tmp and /dev/shm may use "
            f"{self.config.memory_mb} MB together (RYSH_SANDBOX_MEMORY_MB)"
        )


class _CopySize:
    """The working copy's size on disk against RYSH_WORKSPACE_MAX_MB, measured at a poll tick
    and when a command ends; after a slow measurement (a large tree) the next waits
    WATCH_SPACING times as long, across the commands of one sandbox. Past the limit, a copy
    that grew since it was last measured ends the command; one that shrank does not (the
    command that removes what is not needed must run)."""

    def __init__(self, root: Path, limit_mb: int | None):
        self.root, self.limit_mb, self.next_at = root, limit_mb, 0.0
        self.last: int | None = None

    def past(self, now: float) -> str | None:
        if self.limit_mb is None or now < self.next_at:
            return None
        held, before = _disk_usage(self.root), self.last
        self.next_at = time.monotonic() + WATCH_SPACING * (time.monotonic() - now)
        self.last = held
        if held <= self.limit_mb * MB or (before is not None and held <= before):
            return None
        return (
            f"the working copy grew past RYSH_WORKSPACE_MAX_MB ({self.limit_mb} MB): it holds {held // MB} MB; "
            "remove what is not needed (build output, downloads) before the next command"
        )


def _disk_usage(root: Path) -> int:
    """Bytes the tree under root takes on disk (a file with several links counted once; a
    symbolic link never followed)."""
    total, seen, folders = 0, set(), [root]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue  # removed meanwhile, or not ours to read
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                if (info.st_dev, info.st_ino) in seen:
                    continue
                seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
    return total


def _read_into(pipe, kept: _Kept, selector: selectors.BaseSelector) -> None:
    try:
        data = os.read(pipe.fileno(), CHUNK)
    except BlockingIOError:
        return
    if data:
        kept.add(data)
    else:
        selector.unregister(pipe)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _kill_session(leader: int) -> None:
    """Every process of the session the command leads (it was started in a new one). A process
    that starts a session of its own leaves it: only a cgroup finds that one."""
    beyond: set[int] = {leader}  # and a member not ours to kill (a set-user-ID program)
    for _ in range(250):  # again, for what a member forked before it was killed
        members = [pid for pid in _processes() if pid not in beyond and _live_in_session(pid, leader)]
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:
                beyond.add(pid)
        time.sleep(0.002)


def _processes() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _live_in_session(pid: int, session: int) -> bool:
    """pid is in that session and not dead already (a zombie waits for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return False  # gone meanwhile
    # after the command's name, which may hold spaces and parentheses: state ppid pgrp session
    fields = stat[stat.rfind(b")") + 2 :].split()
    return len(fields) > 3 and fields[0] not in (b"Z", b"X") and fields[3] == str(session).encode()


def _read_all(fd: int) -> str:
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


class _Kept:
    """One stream's first and last keep bytes and its total; never the whole stream."""

    def __init__(self, keep: int):
        self.keep, self.total = keep, 0
        self.head, self.tail = bytearray(), bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            del self.tail[: max(0, len(self.tail) - self.keep)]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        head, tail = (part.decode("utf-8", "replace") for part in (self.head, self.tail))
        return f"{head}\n[... {omitted} bytes omitted ...]\n{tail}" if omitted else head + tail


def _duration(seconds: float) -> str:
    """120 -> 2m0s, 90 -> 1m30s, 1.5 -> 1.5s."""
    if seconds < 60:
        return f"{seconds:g}s"
    return f"{int(seconds // 60)}m{seconds % 60:g}s"


def _size(count: int) -> str:
    for unit, name in ((MB, "MB"), (1024, "KB")):
        if count >= unit and count % unit == 0:
            return f"{count // unit} {name}"
    return f"{count} bytes"


def _joining(cgroup: Cgroup | None, argv: list[str]) -> list[str]:
    """argv started inside the command's cgroup, when it has one."""
    return argv if cgroup is None else cgroup.joining(argv)


def server_wrap(config: SandboxConfig) -> tuple[str, ...]:
    """The prefix that runs a long-lived program (a stdio MCP server) in the sandbox: the same
    isolation as a command (no network, no capabilities, its own session, gone with its
    parent), the file system read-only with the data folders hidden, a private /tmp; and the
    same bounds on what it keeps in memory: the folders' sizes, and its processes and memory
    together in a cgroup of its own where one can be made (not the address space per process: a
    JVM or Node server reserves far more than it uses). Its environment is the caller's business
    (agents.mcp_client clears it)."""
    argv = [*server_joining(config.processes, config.memory_mb), shutil.which(config.bwrap) or config.bwrap]
    argv += [*_ISOLATION, "--ro-bind", "/", "/", *_memory_folders(config)]
    hidden = _existing_folders(config.hidden)
    argv += _hiding(hidden)
    for interpreter in _interpreter_in(hidden):  # read-only, after the tmpfs it sits under
        argv += ["--ro-bind", str(interpreter), str(interpreter)]
    argv += _read_only_after_binds(hidden)
    return (*argv, "--chdir", "/tmp", "--", "/bin/sh", "-c", _server_limits(config), "rysh-server")


def _server_limits(config: SandboxConfig) -> str:
    """The sh wrapper of a server: no core files, files up to file_size_mb, then the server."""
    file_blocks = _within_hard(resource.RLIMIT_FSIZE, config.file_size_mb * MB) // 512
    return (
        f"ulimit -c 0 2>/dev/null; ulimit -f {file_blocks} || "
        '{ echo "rysh sandbox: cannot set the limits" >&2; exit 126; }; exec "$@"'
    )


def interpreter_binds(config: SandboxConfig) -> list[tuple[Path, Path]]:
    """The worker's own Python where a hidden folder covers it, as read-only binds at its place:
    what a program the worker runs in the sandbox with sys.executable needs."""
    return [(path, path) for path in _interpreter_in(_existing_folders(config.hidden))]


def _interpreter_in(hidden: Sequence[Path]) -> list[Path]:
    """The worker's own Python installation and virtualenv where a hidden folder covers them (a
    pyenv Python under the worker's HOME, say): a stdio MCP server written in Python needs them,
    and they hold programs, not secrets. Nothing else under a hidden folder comes back."""
    found = []
    for prefix in dict.fromkeys((sys.base_prefix, sys.prefix)):
        path = Path(prefix).resolve()
        if any(path == folder or folder in path.parents for folder in hidden):
            found.append(path)
    return found


def server_argv(
    wrap: Sequence[str],
    command: Sequence[str],
    *,
    needs: Sequence[Sequence[str]] = (),
    path: str = "/usr/bin:/bin",
    readonly: Sequence[tuple[str | Path, str]] = (),
) -> list[str]:
    """`command` run inside `wrap` (server_wrap's prefix). What the commands in `needs` name
    (each a program and its arguments) and lies where the sandbox shows its own empty folders
    instead (its private /tmp and /run, a hidden folder) comes back read-only: a program's
    folder (a virtualenv or an installation whole, and the interpreter it points to), a named
    file's folder, a named folder. `readonly`: (source, destination) pairs bound too."""
    covered = [Path(wrap[i + 1]) for i, word in enumerate(wrap[:-1]) if word == "--tmpfs"]
    binds = [(folder, folder) for folder in _needed_folders(needs, covered, path)]
    binds += [(Path(source), Path(destination)) for source, destination in readonly]
    extra = [word for source, destination in binds for word in ("--ro-bind", str(source), str(destination))]
    # after every tmpfs and before the remounts that make hidden folders read-only (a bind
    # needs its mount point made first), else just before the chdir
    words = list(wrap[:-1])
    at = next((i for i, word in enumerate(words) if word in ("--remount-ro", "--chdir")), len(words))
    return [*words[:at], *extra, *words[at:], wrap[-1], *command]


def _needed_folders(needs: Sequence[Sequence[str]], covered: Sequence[Path], path: str) -> list[Path]:
    """The folders to bring back for `needs`, outermost first; never a covered folder itself or
    one holding it (that would undo the hiding), and nothing the sandbox shows anyway."""
    found: list[Path] = []
    for index, word in ((index, word) for command in needs for index, word in enumerate(command)):
        program = shutil.which(word, path=path) if index == 0 and "/" not in word else word
        if not program or not os.path.isabs(program) or not os.path.exists(program):
            continue
        named = Path(os.path.abspath(program))
        if index == 0:
            found += _program_folders(named, path)
        else:
            found.append(named if named.is_dir() else named.parent)
    kept = []
    for folder in sorted(set(found), key=lambda f: len(f.parts)):
        under = any(folder != c and c in folder.parents for c in covered)
        if under and not any(k == folder or k in folder.parents for k in kept):
            kept.append(folder)
    return kept


def _program_folders(program: Path, path: str) -> list[Path]:
    """Where a program loads from: its folder, or the virtualenv or installation it is the
    interpreter of (python3.11 beside lib/python3.11, node beside lib/node_modules), and the
    same for what it links to and for a script's interpreter."""
    folders = []
    for each in dict.fromkeys((program, program.resolve())):
        folder = each.parent
        if folder.name == "bin" and _installation(folder.parent, each.name):
            folder = folder.parent
            folders += _virtualenv_base(folder)
        folders.append(folder)
    interpreter = _shebang(program)
    if interpreter and Path(interpreter) != program:
        resolved = shutil.which(interpreter, path=path) if "/" not in interpreter else interpreter
        if resolved and os.path.exists(resolved):
            folders += _program_folders(Path(os.path.abspath(resolved)), path)
    return folders


def _installation(prefix: Path, name: str) -> bool:
    lib = prefix / "lib"
    return (
        (prefix / "pyvenv.cfg").exists()
        or (lib / name).is_dir()
        or (name == "node" and (lib / "node_modules").is_dir())
    )


def _virtualenv_base(prefix: Path) -> list[Path]:
    """The installation a virtualenv was made from (`home =` in its pyvenv.cfg)."""
    try:
        lines = (prefix / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return []
    homes = [line.partition("=")[2].strip() for line in lines if line.partition("=")[0].strip() == "home"]
    return [Path(homes[0]).resolve().parent] if homes and homes[0] else []


def _shebang(program: Path) -> str | None:
    """A script's interpreter (`#!/usr/bin/env node` gives node), or None."""
    try:
        with open(program, "rb") as file:
            first = file.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and words[0].endswith("/env") and len(words) > 1:
        return words[1] if words[1] != "-S" or len(words) < 3 else words[2]
    return words[0] if words else None
