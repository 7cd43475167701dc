"""Work that cannot be interrupted (Python's regex engine), done in a forked child the caller can
kill when its time runs out: the coding tools' grep and glob, the eval grader's `output_matches`.

os.fork, not multiprocessing: a django-q2 worker is a daemonic process, and multiprocessing
refuses to start a child from one ("daemonic processes are not allowed to have children").
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection


class Child:
    """A forked child running `target(*args, send)`; its answers arrive on `receive`."""

    def __init__(self, target: Callable[..., None], *args) -> None:
        read_end, write_end = os.pipe()
        self.receive = Connection(read_end, writable=False)
        send = Connection(write_end, readable=False)
        self.pid = os.fork()
        if self.pid == 0:  # the child: answer, then leave at once (no atexit, no Django teardown)
            try:
                self.receive.close()
                target(*args, send)
            finally:
                os._exit(0)
        send.close()

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def end(self) -> None:
        """Kill the child if it still runs, reap it, close the pipe."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass  # reaped already by alive()
        self.receive.close()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc) -> None:
        self.end()
