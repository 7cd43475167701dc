"""Real MCP servers for the tests (tests/toolservers/servers.py): the stdio command that starts
one, and a streamable-HTTP one started on loopback in its own process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = str(Path(__file__).with_name("servers.py"))


def stdio_command(name: str) -> str:
    return f"{sys.executable} {SCRIPT} stdio {name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server():
    """Start an HTTP MCP server by name; returns its URL. Stopped at the test's end."""
    started = []

    def start(name: str = "tracker") -> str:
        port = _free_port()
        proc = subprocess.Popen([sys.executable, SCRIPT, "http", name, str(port)])
        started.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return f"http://127.0.0.1:{port}/mcp"
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the HTTP MCP server did not start")

    yield start
    for proc in started:
        proc.kill()
        proc.wait(5)
