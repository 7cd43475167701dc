"""Websocket consumers: login required, current state at once, changes from other processes."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from runs import events
from runs.models import Run
from rysh_site.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")  # exact origins: RYSH_SITE_URL's port


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def make_run(**fields) -> Run:
    defaults = dict(
        kind="task",
        name="demo",
        target="task/demo",
        recipe_path="x.md",
        recipe_text="x",
        provider="scripted",
        executor_model="scripted-demo",
        judge_model="scripted-demo",
        output_dir="",
        state="running",
        pass_number=1,
        plan={
            "passes": 3,
            "worst_tokens": 24000,
            "split": {
                "task": {"tokens": 7200, "steps": 36, "seconds": 540},
                "takeover": {"tokens": 200000, "steps": 100, "seconds": 300},
            },
            "outer_tokens": 24000,
        },
    )
    return Run.objects.create(**{**defaults, **fields})


async def connect(path, headers):
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


def test_it_refuses_anonymous_users():
    async def go():
        communicator, connected, code = await connect("/ws/live/", [ORIGIN])
        assert not connected and code == 4401

    async_to_sync(go)()


def test_it_sends_the_current_state_then_changes_made_elsewhere(settings):
    settings.RYSH_LIVE_POLL_MS = 20
    cookie = session_cookie(User.objects.create_user("ann", password="x"))
    run = make_run(name="<b>hostile</b>", target="task/<b>hostile</b>")

    async def go():
        communicator, connected, _ = await connect("/ws/live/", [ORIGIN, cookie])
        assert connected
        first = await communicator.receive_from(timeout=5)
        assert 'id="live-table" hx-swap-oob="true"' in first and f'id="run-row-{run.pk}"' in first
        assert "running pass" in first and "&lt;b&gt;hostile&lt;/b&gt;" in first and "<b>hostile" not in first
        # a worker in another process: it writes the state and an event, and pushes nothing here
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(state="paused", pause_reason="cancelled")
        await sync_to_async(events.RunEvent.objects.create)(run=run, kind="paused", message="paused(cancelled)")
        second = await communicator.receive_from(timeout=5)
        assert "paused(cancelled)" in second
        await communicator.disconnect()

    async_to_sync(go)()


def test_it_catches_up_on_reconnect():
    cookie = session_cookie(User.objects.create_user("bob", password="x"))
    run = make_run()

    async def go():
        communicator, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        await communicator.receive_from(timeout=5)
        await communicator.disconnect()  # the socket drops mid-run...
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(last_verdict="NO", pass_number=2)
        again, connected, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        state = await again.receive_from(timeout=5)  # ...and the first message is the current state
        assert 'id="run-head" hx-swap-oob="true"' in state and "pass 2/3" in state
        assert '<span id="run-verdict">NO</span>' in state
        await again.disconnect()

    async_to_sync(go)()


def test_it_pushes_in_process_changes_through_the_channel_layer(settings):
    settings.RYSH_LIVE_TAIL = False  # only the layer can deliver this one
    cookie = session_cookie(User.objects.create_user("cy", password="x"))
    run = make_run()

    async def go():
        communicator, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        await communicator.receive_from(timeout=5)
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(last_verdict="YES")
        await sync_to_async(events.push)(run.pk, None, "verdict")
        pushed = await communicator.receive_from(timeout=5)
        assert '<span id="run-verdict">YES</span>' in pushed
        await communicator.disconnect()

    async_to_sync(go)()


def test_it_closes_for_an_unknown_run():
    cookie = session_cookie(User.objects.create_user("dee", password="x"))

    async def go():
        _, connected, code = await connect("/ws/runs/999/", [ORIGIN, cookie])
        assert not connected and code == 4404

    async_to_sync(go)()
