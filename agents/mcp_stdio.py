"""How a stdio MCP server starts (docs/mcp.md): through a tiny launcher that reads the server's
environment from a private file, so no command line — the server's, the sandbox's — ever holds
a value that `ps` would show any local user; and with its stderr read by a thread of ours and
kept as its last lines, which say why a start failed.
"""

from __future__ import annotations

import collections
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from agents.sandbox import server_argv

MASK = "••••"

# The launcher every stdio server starts through: it reads the server's environment from a file
# (NAME=value records, NUL-separated; unlinked as soon as read where it can be), then execs the
# server with exactly that environment — the worker's never, and no command line holds a value.
LAUNCHER = """import os, sys
path, argv = sys.argv[1], sys.argv[2:]
with open(path, "rb") as f:
    raw = f.read()
try:
    os.unlink(path)
except OSError:
    pass
env = dict(r.decode("utf-8", "surrogateescape").split("=", 1) for r in raw.split(b"\\0") if r)
try:
    os.execvpe(argv[0], argv, env)
except OSError as e:
    sys.exit(f"cannot start {argv[0]}: {e.strerror}")
"""
SECRETS_INSIDE = "/run/rysh-mcp"  # where the sandbox shows the environment file's folder
STDERR_LINES = 8


def launch_argv(command: Sequence[str], wrap: Sequence[str], env_file: Path, *, path: str) -> list[str]:
    """The argv that starts a stdio server: the launcher (the worker's own Python, isolated and
    without site) given the environment file, then the server's command; in the sandbox (`wrap`:
    agents.sandbox.server_wrap's prefix), with the file's folder and what the command needs from
    folders the sandbox hides bound in."""
    launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER]
    if not wrap:
        return [*launcher, str(env_file), *command]
    return server_argv(
        wrap,
        [*launcher, f"{SECRETS_INSIDE}/{env_file.name}", *command],
        needs=[[sys.executable], command],
        path=path,
        readonly=[(env_file.parent, SECRETS_INSIDE)],
    )


class EnvFile:
    """A stdio server's environment in a file of a private (0700) folder of its own, 0600,
    removed once the server answered, and in any case when the connection ends."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.folder: Path | None = None
        self.path = Path()

    def __enter__(self) -> EnvFile:
        self.folder = Path(tempfile.mkdtemp(prefix="rysh-mcp-"))  # mode 0700
        self.path = self.folder / "env"
        records = b"".join(f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0" for k, v in self.env.items())
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(records)
        return self

    def remove(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __exit__(self, *exc) -> None:
        self.remove()


class StderrTail:
    """A stdio server's stderr, read by a thread of its own (a full pipe would stall the
    server) and kept only as its last lines, the server's secrets masked: what a failed start
    says."""

    def __init__(self, hide=()):
        self.hide = sorted((value for value in hide if len(value) >= 4), key=len, reverse=True)
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.reader_fd, writer_fd = os.pipe()
        self.writer = os.fdopen(writer_fd, "wb", buffering=0)
        self.thread = threading.Thread(target=self._read, name="mcp-stderr", daemon=True)

    def __enter__(self) -> StderrTail:
        self.thread.start()
        return self

    def started(self) -> None:
        """The server holds its own copy now: ours must close, or the reader never ends."""
        if not self.writer.closed:
            self.writer.close()

    def _read(self) -> None:
        with os.fdopen(self.reader_fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    self.lines.append(line[:300])

    def last_lines(self) -> str:
        self.started()
        self.thread.join(1)  # the server is gone: what it wrote last is in the pipe
        text = " | ".join(self.lines)
        for value in self.hide:
            text = text.replace(value, MASK)
        return text[-1000:]

    def __exit__(self, *exc) -> None:
        self.started()
