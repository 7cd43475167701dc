"""The live label says whether the page's socket is open, in real Chromium against daphne: a socket
the server refuses at the handshake (an origin it does not accept) shows "not live: reload", as a
socket that drops does, and a reconnect shows "live" again."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.stack import free_port, wait_for_port
from tests.e2e.test_dashboard import SocketSwitch

pytestmark = pytest.mark.e2e


@pytest.fixture
def elsewhere(stack):
    """A second daphne on the same data, on a port its websocket origins do not include (they
    follow RYSH_PORT, the first one's): every socket its pages open is refused by origin."""
    port = free_port()
    proc = stack._spawn(
        "daphne-elsewhere",
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "rysh_site.asgi:application"],
    )
    wait_for_port(port, proc)
    yield f"http://127.0.0.1:{port}"
    stack.stop_process("daphne-elsewhere")


def label(page) -> str:
    return page.inner_text("#live-status")


def test_a_socket_refused_by_origin_says_not_live(stack, as_user, elsewhere):
    page = as_user("viewer")  # the session cookie is the host's, whatever the port
    closes = []
    page.on("websocket", lambda ws: ws.on("close", lambda _ws: closes.append(1)))
    page.goto(f"{elsewhere}/")
    page.wait_for_function("() => document.querySelector('#live-status').textContent === 'not live: reload'")
    assert closes and "WSREJECT /ws/live/" in stack.log("daphne-elsewhere")  # refused at the handshake
    assert page.eval_on_selector("#live-status", "el => el.classList.contains('not-live')")


def test_the_label_follows_a_socket_that_drops_and_comes_back(stack, as_user):
    page = as_user("viewer")
    switch = SocketSwitch(page)
    page.goto(f"{stack.url}/")
    page.wait_for_function("() => window.htmx !== undefined")
    switch.off()
    page.wait_for_function("() => document.querySelector('#live-status').textContent === 'not live: reload'")
    switch.on()
    page.wait_for_function("() => document.querySelector('#live-status').textContent === 'live'", timeout=30_000)
    assert not page.eval_on_selector("#live-status", "el => el.classList.contains('not-live')")
    assert label(page) == "live"
