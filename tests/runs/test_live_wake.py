"""Writers wake the live hub (runs/live/wake.py): a commit reaches every web process's hub at
once, not at its safety-net tick; a web process that is gone never blocks or fails a writer."""

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

from runs import events
from runs.live import hub, wake
from runs.models import Run
from tests.runs.test_consumers import ORIGIN, connect, make_run, session_cookie
from tests.runs.test_live_hub import user_with

pytestmark = pytest.mark.django_db(transaction=True)
NEVER_MS = 600_000  # a safety net that never fires within a test


def worker_change(run: Run, verdict: str) -> None:
    """What a worker in another process does: write and record in one transaction; its push
    reaches no channel layer of this web process (the test turns that off), only the wake-up."""
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(last_verdict=verdict)
        events.record(run, "note", f"verdict {verdict}")


@pytest.fixture
def worker_push_reaches_nobody(monkeypatch):
    monkeypatch.setattr(events, "_send", lambda payload: None)


def test_every_listener_in_the_folder_is_woken(tmp_path):
    first, second = wake.Listener(tmp_path), wake.Listener(tmp_path)
    try:
        assert wake.wake_all(tmp_path) == 2
        assert first.sock.recv(64) == b"1" and second.sock.recv(64) == b"1"
    finally:
        first.close(), second.close()
    assert list(tmp_path.iterdir()) == []  # a closed listener leaves no file
    assert wake.wake_all(tmp_path) == 0
    assert wake.wake_all(tmp_path / "never-made") == 0


def test_a_full_listener_drops_the_datagram_without_blocking_the_writer(tmp_path):
    listener = wake.Listener(tmp_path)
    try:
        started = time.monotonic()
        for _ in range(5000):  # far more than a socket's queue holds; nobody reads
            wake.wake_all(tmp_path)
        assert time.monotonic() - started < 5
        assert listener.path.exists()  # full is not gone: its hub is awake already
    finally:
        listener.close()


LISTEN_THEN_WAIT = """
import sys, time
from pathlib import Path
from runs.live import wake
listener = wake.Listener(Path(sys.argv[1]))
print(listener.path, flush=True)
time.sleep(600)
"""


def test_a_killed_web_process_never_blocks_or_fails_a_writer(settings, worker_push_reaches_nobody):
    settings.RYSH_LIVE_TAIL = True
    folder = Path(settings.RYSH_LIVE_WAKE_DIR)
    root = Path(__file__).resolve().parents[2]
    web = subprocess.Popen(
        [sys.executable, "-c", LISTEN_THEN_WAIT, str(folder)], cwd=root, stdout=subprocess.PIPE, text=True
    )
    path = Path(web.stdout.readline().strip())
    assert path.exists()
    os.kill(web.pid, signal.SIGKILL)  # no clean-up: its socket file stays behind
    web.wait(timeout=10)
    assert path.exists()
    run = make_run()
    started = time.monotonic()
    worker_change(run, "YES")
    assert time.monotonic() - started < 1
    assert run.events.filter(kind="note").count() == 1
    assert not path.exists()  # the writer found nobody there and removed the file


def watch_run_page(run: Run, cookie) -> str | None:
    """Open the run page's socket, have a worker change the run, return what the socket is sent
    within 3 s (None when nothing)."""

    async def go():
        communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        assert connected
        await communicator.receive_from(timeout=5)
        await sync_to_async(worker_change)(run, "NO")
        got = None if await communicator.receive_nothing(timeout=3) else await communicator.receive_from()
        await communicator.disconnect()
        return got

    return async_to_sync(go)()


def test_a_workers_commit_wakes_the_hub_before_its_safety_net_tick(settings, worker_push_reaches_nobody):
    settings.RYSH_LIVE_POLL_MS = NEVER_MS
    run = make_run()
    got = watch_run_page(run, session_cookie(user_with("watcher")))
    assert got is not None and '<span id="run-verdict">NO</span>' in got


def test_without_the_wake_up_the_change_waits_for_the_tick(settings, worker_push_reaches_nobody, monkeypatch):
    """The test above is not passed by something else: take the datagram away and nothing comes."""
    settings.RYSH_LIVE_POLL_MS = NEVER_MS
    monkeypatch.setattr(wake, "wake_all", lambda folder, message=b"1": 0)
    run = make_run()
    assert watch_run_page(run, session_cookie(user_with("watcher"))) is None


def two_web_processes_see(run: Run, *, tail: bool, layer) -> list[bool]:
    """Two hubs, as two web processes have, each with one socket on the run's page; a worker
    changes the run; which hubs rendered the change within 3 s."""

    async def go():
        seen = [asyncio.Event(), asyncio.Event()]
        hubs, boxes = [], []
        for i in range(2):

            async def send(html, i=i):
                if '<span id="run-verdict">YES</span>' in html:
                    seen[i].set()

            box = hub.Outbox(send)
            pump = asyncio.ensure_future(box.pump())
            one = hub.Hub(tail=tail, poll_seconds=NEVER_MS / 1000, layer=layer)
            await one.join(box, hub.view_of("run", run.pk, frozenset()))
            hubs.append(one), boxes.append((box, pump))
        await asyncio.sleep(0.2)  # the first states are sent
        await sync_to_async(worker_change)(run, "YES")
        try:
            await asyncio.wait_for(asyncio.gather(*(event.wait() for event in seen)), timeout=3)
        except TimeoutError:
            pass
        for one, (box, pump) in zip(hubs, boxes):
            pump.cancel()
            await one.leave(box)
        return [event.is_set() for event in seen]

    return async_to_sync(go)()


def test_two_web_processes_are_both_woken_on_the_embedded_default(settings, worker_push_reaches_nobody):
    run = make_run()
    assert two_web_processes_see(run, tail=True, layer=None) == [True, True]
    assert list(Path(settings.RYSH_LIVE_WAKE_DIR).glob("*.sock")) == []  # both hubs stopped, files gone


def test_two_web_processes_are_both_woken_through_redis(settings, redis_url):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}}
    }
    settings.RYSH_LIVE_TAIL = False  # as with REDIS_URL: the group message is the wake-up
    run = make_run()
    assert two_web_processes_see(run, tail=False, layer=get_channel_layer()) == [True, True]
