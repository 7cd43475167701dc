"""Every shell command of a coding agent runs here: in a bubblewrap sandbox (SPEC §11).

Inside, the working copy is the only writable place the host lends (a setup's dependency caches
aside, docs/coding-loops.md): the rest of the file system is
mounted read-only, `/run` (the UNIX sockets of PostgreSQL, Redis, docker…), `/tmp`, HOME and the
folders the caller hides (the data folder, the worker's HOME) are empty tmpfs, and the command gets
its own user, PID, IPC, UTS, cgroup and network namespaces — no network at all, only a loopback of
its own — and no capabilities. The environment is cleared to PATH, LANG, HOME and TERM (and what the
caller adds: a setup's proxy, the dependency caches' folders): never a key, a database URL or a
RYSH_ setting. Limits on memory, processes and file size are set by a small sh wrapper inside the
sandbox (not a preexec_fn: the worker has threads), output is capped, and a timeout or a cancel
kills bwrap's whole process group; with its PID namespace gone, nothing the command started
survives it.

Why a pids cgroup as root: the kernel never applies RLIMIT_NPROC to uid 0 (and root inside the
sandbox's user namespace is uid 0 outside), so a worker running as root gets its process limit
from a pids cgroup per command where the cgroup file system lets it make one.

Pure: the standard library only; the caller passes the settings in a SandboxConfig.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
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

log = logging.getLogger(__name__)

HOME = "/tmp/home"
LANG = "C.UTF-8"
TERM = "dumb"
CHUNK = 64 * 1024
DRAIN_SECONDS = 1.0  # after the command ended, how long an escaped holder of its pipes may keep them
PROBE_SECONDS = 10.0
MB = 1024 * 1024
HINT_OFF = "or, knowing that commands then run unconfined, an admin may set RYSH_SANDBOX=off"


@dataclass(frozen=True)
class SandboxConfig:
    enabled: bool = True  # False: an admin set RYSH_SANDBOX=off; commands run as plain subprocesses
    memory_mb: int = 4096  # address space per process (ulimit -v)
    processes: int = 512  # processes (ulimit -u; a pids cgroup when the worker is root)
    file_size_mb: int = 1024  # largest file a command may write (ulimit -f)
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
    argv = [executable, *_ISOLATION, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/run", "--tmpfs", "/tmp", "--clearenv", "--", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_SECONDS, env={})
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap ({executable}) could not start: {error}; {HINT_OFF}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
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
        with _pids_cgroup(self.config.processes) as cgroup:
            if self.config.enabled:
                return self._run_sandboxed(command, folder, timeout, cancelled, poll, cgroup)
            with tempfile.TemporaryDirectory(prefix="rysh-home-", ignore_cleanup_errors=True) as home:
                env = _environment(self.config, home) | self.environment
                argv = _joining(cgroup, ["/bin/sh", "-c", _limits(self.config), *_shell(self.config, command)])
                return _execute(argv, self.config, timeout, cancelled, poll, cgroup, cwd=folder, env=env)

    def _folder(self, cwd: str | Path) -> Path:
        folder = (self.given_root / cwd).resolve()
        if not folder.is_relative_to(self.root):
            raise ValueError(f"the command's folder {cwd} is outside the working copy {self.root}")
        if not folder.is_dir():
            raise ValueError(f"the command's folder {cwd} is not a folder of the working copy")
        return folder

    def _run_sandboxed(self, command, folder, timeout, cancelled, poll, cgroup) -> CommandResult:
        status_read, status_write = os.pipe()
        try:
            argv = _joining(cgroup, self._bwrap_argv(command, folder, status_write))
            result = _execute(argv, self.config, timeout, cancelled, poll, cgroup, pass_fds=(status_write,), env={})
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
        argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        argv += ["--tmpfs", "/run", "--tmpfs", "/tmp", "--dir", HOME]
        hidden = _existing_folders(config.hidden)
        for folder_hidden in hidden:
            argv += ["--tmpfs", str(folder_hidden)]
        argv += ["--bind", str(self.root), str(self.root)]
        for source, destination in self.writable:
            argv += ["--bind", str(source), str(destination)]
        for source, destination in self.readonly:
            argv += ["--ro-bind", str(source), str(destination)]
        for folder_hidden in hidden:  # after the binds, which may need mount points inside them
            argv += ["--remount-ro", str(folder_hidden)]
        argv += ["--clearenv"]
        for name, value in (_environment(config, HOME) | self.environment).items():
            argv += ["--setenv", name, value]
        argv += ["--chdir", str(folder), "--", "/bin/sh", "-c", _limits(config), *_shell(config, command)]
        return argv


def _existing_folders(paths: Sequence[str]) -> list[Path]:
    """Hidden folders that exist (bwrap cannot mount over a missing one in a read-only tree)."""
    return [Path(path).resolve() for path in paths if Path(path).resolve().is_dir()]


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


def _execute(argv, config, timeout, cancelled, poll, cgroup, **popen) -> CommandResult:
    """Start argv leading its own process group, collect its output, kill the group when needed."""
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **popen
    )
    streams = {proc.stdout: _Kept(config.keep_bytes), proc.stderr: _Kept(config.keep_bytes)}
    try:
        killed = _collect(proc, streams, config, started + timeout, timeout, cancelled, poll, cgroup)
    finally:
        _kill_group(proc)  # whatever is left: an exception above, or background children unsandboxed
        proc.wait()
        if cgroup:
            cgroup.kill_all()
        for pipe in streams:
            pipe.close()
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


def _collect(proc, streams, config, deadline, timeout, cancelled, poll, cgroup) -> str | None:
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
                killed = _why_kill(now, deadline, timeout, next_poll, cancelled, streams, config)
                next_poll = now + poll if now >= next_poll else next_poll
                if killed:
                    _kill_group(proc)
            if drain_until is None and proc.poll() is not None:
                # It ended; its pipes close unless something it started (unsandboxed) holds them.
                _kill_group(proc)
                if cgroup:
                    cgroup.kill_all()
                drain_until = now + DRAIN_SECONDS
            if drain_until is not None and (now >= drain_until or not selector.get_map()):
                return killed
            wait = poll if killed else min(poll, next_poll - now, deadline - now)
            _wait_for_output(proc, selector, streams, max(0.0, wait))


def _wait_for_output(proc, selector, streams, wait: float) -> None:
    if not selector.get_map():  # the command closed both streams and still runs
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            pass
        return
    for key, _ in selector.select(wait):
        _read_into(key.fileobj, streams[key.fileobj], selector)


def _why_kill(now, deadline, timeout, next_poll, cancelled, streams, config) -> str | None:
    if now >= deadline:
        return f"timed out after {_duration(timeout)}"
    if sum(kept.total for kept in streams.values()) > config.output_bytes:
        return f"output limit ({_size(config.output_bytes)}) passed"
    if now >= next_poll:
        return cancelled() or None
    return None


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


# -- the process limit of a root worker ----------------------------------------------------------

_serial = itertools.count()
CGROUP_PREFIX = "rysh-sandbox-"


class _PidsCgroup:
    """A pids cgroup of its own for one command (made only when the worker runs as root)."""

    def __init__(self, parent: Path, processes: int):
        self.path = parent / f"{CGROUP_PREFIX}{os.getpid()}-{next(_serial)}"
        self.path.mkdir()
        try:
            # the sh that joins the cgroup and bwrap's monitor count too
            (self.path / "pids.max").write_text(f"{processes + 2}\n")
        except OSError:
            self.path.rmdir()
            raise

    def kill_all(self) -> None:
        for _ in range(250):  # half a second for the killed to leave
            pids = [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)

    def remove(self) -> None:
        for _ in range(100):  # the kernel empties it a moment after the last process is reaped
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)
        log.warning("could not remove the pids cgroup %s", self.path)


class _pids_cgroup:
    """with _pids_cgroup(n) as cgroup: a _PidsCgroup, or None when the worker is not root (its
    ulimit -u holds) or no pids cgroup can be made (then a root worker has no process limit)."""

    def __init__(self, processes: int):
        self.processes, self.cgroup = processes, None

    def __enter__(self) -> _PidsCgroup | None:
        parent = _pids_parent()
        if parent is not None:
            try:
                self.cgroup = _PidsCgroup(parent, self.processes)
            except OSError as error:
                log.warning(
                    "no pids cgroup under %s (%s): this root worker's commands have no process limit", parent, error
                )
        return self.cgroup

    def __exit__(self, *exc) -> None:
        if self.cgroup:
            self.cgroup.kill_all()
            self.cgroup.remove()


def _joining(cgroup: _PidsCgroup | None, argv: list[str]) -> list[str]:
    """argv started inside the cgroup before it can fork (an sh that joins it, then execs)."""
    if cgroup is None:
        return argv
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup.path / "cgroup.procs"), *argv]


@functools.cache
def _pids_parent() -> Path | None:
    """This process's cgroup in a hierarchy with the pids controller, when the worker is root and
    may make children there; stale children of dead workers are removed on the way."""
    if os.geteuid() != 0:
        return None
    try:
        parent = _find_pids_parent(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError:
        parent = None
    if parent is None or not os.access(parent, os.W_OK):
        log.warning("no pids cgroup to use: commands of this root worker have no process limit")
        return None
    _remove_stale(parent)
    return parent


def _find_pids_parent(mountinfo: str, own: str) -> Path | None:
    memberships = {}
    for line in own.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else ["<v2>"]:
            memberships[controller] = path
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        mount_root, mount_point = fields.split()[3:5]
        fstype, _, options = tail.split()[:3]
        if fstype == "cgroup" and "pids" in options.split(",") and "pids" in memberships:
            return _under(mount_point, mount_root, memberships["pids"])
        if fstype == "cgroup2" and "<v2>" in memberships:
            folder = _under(mount_point, mount_root, memberships["<v2>"])
            if "pids" in (folder / "cgroup.controllers").read_text().split() and _pids_enabled(folder):
                return folder
    return None


def _under(mount_point: str, mount_root: str, path: str) -> Path:
    return Path(mount_point) / os.path.relpath(path, mount_root)


def _pids_enabled(folder: Path) -> bool:
    """cgroup v2 gives children pids.max only when the parent enables the controller for them."""
    if "pids" in (folder / "cgroup.subtree_control").read_text().split():
        return True
    try:
        (folder / "cgroup.subtree_control").write_text("+pids\n")
        return True
    except OSError:
        return False


def _remove_stale(parent: Path) -> None:
    for folder in parent.glob(f"{CGROUP_PREFIX}*"):
        match = re.fullmatch(rf"{CGROUP_PREFIX}(\d+)-\d+", folder.name)
        if match and not Path(f"/proc/{match[1]}").exists():
            try:
                folder.rmdir()
            except OSError:
                pass


def server_wrap(config: SandboxConfig) -> tuple[str, ...]:
    """The prefix that runs a long-lived program (a stdio MCP server) in the sandbox: the same
    isolation as a command (no network, no capabilities, its own session, gone with its
    parent), the file system read-only with the data folders hidden, a private /tmp. Its
    environment is the caller's business (agents.mcp_client clears it with `env -i`)."""
    argv = [shutil.which(config.bwrap) or config.bwrap, *_ISOLATION]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run", "--tmpfs", "/tmp"]
    hidden = _existing_folders(config.hidden)
    for folder in hidden:
        argv += ["--tmpfs", str(folder)]
    for interpreter in _interpreter_in(hidden):  # read-only, after the tmpfs it sits under
        argv += ["--ro-bind", str(interpreter), str(interpreter)]
    for folder in hidden:
        argv += ["--remount-ro", str(folder)]
    return (*argv, "--chdir", "/tmp", "--")


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
