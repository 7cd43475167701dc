"""Writers wake every web process's live hub the moment they commit, on the embedded default.

Each hub that tails the RunEvent log binds one Unix datagram socket in a folder under the data
folder (RYSH_LIVE_WAKE_DIR, one socket per web process); a writer (a worker's step, a control)
sends one small datagram to every socket there after its commit (runs/events.py). The hub reads
the log at once instead of at its next tick; the tick stays only as a slow safety net
(RYSH_LIVE_POLL_MS). A datagram carries no news of its own (the log holds the truth), so one
that is lost costs latency only.

A writer never waits and never fails for it: its socket does not block, a socket whose server is
gone is refused at once (and its file removed), a full one drops the datagram (that hub is
awake already), and any other error is logged and ignored.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)
SUFFIX = ".sock"
PATH_MAX = 107  # sun_path holds 108 bytes with its terminating NUL
_counter = 0
_lock = threading.Lock()
_sender: tuple[int, socket.socket] | None = None


class Listener:
    """A hub's end: a bound datagram socket in the wake folder, read from the event loop."""

    def __init__(self, folder: Path):
        global _counter
        with _lock:
            _counter += 1
            name = f"{os.getpid()}-{_counter}{SUFFIX}"
        self.path = Path(folder) / name
        self.sock: socket.socket | None = None
        if len(os.fsencode(self.path)) > PATH_MAX:
            log.warning("live: the wake folder's path is too long for a socket (%s); the hub polls", self.path)
            return
        try:
            Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # a pid reused after a crash
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.setblocking(False)
            sock.bind(str(self.path))
            self.sock = sock
        except OSError:
            log.warning("live: cannot listen for wake-ups at %s; the hub polls", self.path, exc_info=True)

    def attach(self, loop, on_wake: Callable[[], None]) -> None:
        if self.sock is not None:
            loop.add_reader(self.sock.fileno(), self._read, on_wake)

    def _read(self, on_wake: Callable[[], None]) -> None:
        woken = False
        while True:  # drain: many writers' datagrams make one wake-up
            try:
                self.sock.recv(64)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            woken = True
        if woken:
            on_wake()

    def close(self, loop=None) -> None:
        if self.sock is None:
            return
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.sock.fileno())
        self.sock.close()
        self.sock = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _socket() -> socket.socket:
    """This process's sending socket (again in a forked child)."""
    global _sender
    with _lock:
        if _sender is None or _sender[0] != os.getpid():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.setblocking(False)
            _sender = (os.getpid(), sock)
        return _sender[1]


def wake_all(folder: Path, message: bytes = b"1") -> int:
    """Send one datagram to every hub listening in `folder`; how many took it. Never blocks, never
    raises."""
    try:
        entries = [entry.path for entry in os.scandir(folder) if entry.name.endswith(SUFFIX)]
    except FileNotFoundError:  # no web process has listened here yet
        return 0
    except OSError:
        log.warning("live: cannot read the wake folder %s", folder, exc_info=True)
        return 0
    sent = 0
    sock = _socket()
    for path in entries:
        try:
            sock.sendto(message, path)
            sent += 1
        except (ConnectionRefusedError, FileNotFoundError):  # its web process is gone
            with contextlib.suppress(OSError):
                os.unlink(path)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS):  # full: awake already
                log.warning("live: waking %s failed", path, exc_info=True)
    return sent
