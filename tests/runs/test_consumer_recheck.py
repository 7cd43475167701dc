"""An open websocket keeps up with its user: a logout, an ended session, a deactivation or a
password change closes it (4401: the page does not reconnect); a role change changes what it is
sent. At once when a web process records the change, otherwise at the periodic check."""

import asyncio

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.test import Client

from runs import events
from runs.live import consumers
from runs.models import Run, RunEvent
from tests.runs.test_consumers import ORIGIN, connect, make_run

pytestmark = pytest.mark.django_db(transaction=True)
BUTTON = "data-control-url"  # every control button carries one
CLOSED = {"type": "websocket.close", "code": 4401}


@pytest.fixture(autouse=True)
def slow_periodic_check(settings):
    """Long enough that only the immediate re-check can act within a test's timeouts."""
    settings.RYSH_WS_RECHECK_SECONDS = 60
    settings.RYSH_LIVE_POLL_MS = 20


def logged_in(name: str, role: str | None = None) -> tuple[User, Client, tuple[bytes, bytes]]:
    user = User.objects.create_user(name, password="x")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    return user, client, (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def change(run: Run, verdict: str) -> None:
    Run.objects.filter(pk=run.pk).update(last_verdict=verdict)
    RunEvent.objects.create(run=run, kind="note", message=f"verdict {verdict}")


async def opened(path: str, cookie):
    communicator, connected, _ = await connect(path, [ORIGIN, cookie])
    assert connected
    return communicator, await communicator.receive_from(timeout=5)


def test_it_closes_the_socket_when_its_user_logs_out():
    _, client, cookie = logged_in("ann")

    async def go():
        communicator, _ = await opened("/ws/live/", cookie)
        await sync_to_async(client.post)("/logout/")
        assert await communicator.receive_output(timeout=5) == CLOSED

    async_to_sync(go)()


def test_it_closes_the_socket_when_its_user_is_deactivated():
    user, _, cookie = logged_in("ann")
    run = make_run()

    async def go():
        communicator, _ = await opened(f"/ws/runs/{run.pk}/", cookie)
        user.is_active = False
        await sync_to_async(user.save)()
        assert await communicator.receive_output(timeout=5) == CLOSED

    async_to_sync(go)()


def test_it_closes_the_socket_when_the_password_changes():
    user, _, cookie = logged_in("ann")

    async def go():
        communicator, _ = await opened("/ws/live/", cookie)
        user.set_password("a-new-one")
        await sync_to_async(user.save)()  # every session made with the old one ends
        assert await communicator.receive_output(timeout=5) == CLOSED

    async_to_sync(go)()


def test_the_periodic_check_closes_a_socket_whose_session_ended_without_a_signal(settings):
    settings.RYSH_WS_RECHECK_SECONDS = 0.2
    _, _, cookie = logged_in("ann")

    async def go():
        communicator, _ = await opened("/ws/live/", cookie)
        await sync_to_async(Session.objects.all().delete)()  # e.g. removed by hand, or expired
        assert await communicator.receive_output(timeout=5) == CLOSED

    async_to_sync(go)()


def test_a_role_taken_away_stops_what_it_showed_and_the_socket_goes_on():
    user, _, cookie = logged_in("olga", "operator")
    run = make_run()

    async def go():
        communicator, first = await opened(f"/ws/runs/{run.pk}/", cookie)
        assert BUTTON in first
        await sync_to_async(user.groups.clear)()
        demoted = await communicator.receive_from(timeout=5)
        assert BUTTON not in demoted and 'id="run-head"' in demoted
        await sync_to_async(change)(run, "NO")
        later = await communicator.receive_from(timeout=5)
        assert '<span id="run-verdict">NO</span>' in later and BUTTON not in later
        await communicator.disconnect()

    async_to_sync(go)()


def test_a_role_given_shows_what_it_allows():
    user, _, cookie = logged_in("vic")
    run = make_run()

    async def go():
        communicator, first = await opened(f"/ws/runs/{run.pk}/", cookie)
        assert BUTTON not in first
        operator = await sync_to_async(lambda: Group.objects.get_or_create(name="operator")[0])()
        await sync_to_async(operator.user_set.add)(user)
        assert BUTTON in await communicator.receive_from(timeout=5)
        await communicator.disconnect()

    async_to_sync(go)()


def test_renaming_a_group_changes_what_its_members_sockets_show():
    _, _, cookie = logged_in("ren", "ops-team")
    run = make_run()

    async def go():
        communicator, first = await opened(f"/ws/runs/{run.pk}/", cookie)
        assert BUTTON not in first
        await sync_to_async(Group.objects.filter(name="operator").delete)()

        def rename():
            group = Group.objects.get(name="ops-team")
            group.name = "operator"
            group.save()

        await sync_to_async(rename)()
        assert BUTTON in await communicator.receive_from(timeout=5)
        await communicator.disconnect()

    async_to_sync(go)()


def test_another_users_logout_leaves_a_socket_open():
    _, ann_client, ann_cookie = logged_in("ann")
    _, _, bob_cookie = logged_in("bob")
    run = make_run()

    async def go():
        ann, _ = await opened(f"/ws/runs/{run.pk}/", ann_cookie)
        bob, _ = await opened(f"/ws/runs/{run.pk}/", bob_cookie)
        await sync_to_async(ann_client.post)("/logout/")
        assert await ann.receive_output(timeout=5) == CLOSED
        await sync_to_async(change)(run, "YES")
        assert '<span id="run-verdict">YES</span>' in await bob.receive_from(timeout=5)
        await bob.disconnect()

    async_to_sync(go)()


def test_a_recheck_never_changes_the_session(settings):
    """After a SECRET_KEY rotation the old key still verifies a session (SECRET_KEY_FALLBACKS):
    the socket stays open, and its check leaves the session alone (a new key, which only an
    HTTP response can hand the browser, would log the person out)."""
    user, _, cookie = logged_in("ann")
    key = cookie[1].decode().split("=", 1)[1]
    run = make_run()

    async def go():
        communicator, _ = await opened(f"/ws/runs/{run.pk}/", cookie)
        settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
        settings.SECRET_KEY = "a-rotated-secret-key-" + "x" * 40
        user.first_name = "Ann"
        await sync_to_async(user.save)()  # a save: the socket checks again at once
        await sync_to_async(change)(run, "YES")
        assert '<span id="run-verdict">YES</span>' in await communicator.receive_from(timeout=5)
        assert await sync_to_async(Session.objects.filter(session_key=key).exists)()
        await communicator.disconnect()

    async_to_sync(go)()


def test_with_redis_a_logout_in_another_web_process_closes_the_socket_at_once(settings, redis_url):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}}
    }
    settings.RYSH_LIVE_TAIL = False  # as with REDIS_URL: only the layer carries news
    user, _, cookie = logged_in("ann")

    async def go():
        communicator, _ = await opened("/ws/live/", cookie)
        # another web process: it ends the session and says so through Redis, nothing else
        await sync_to_async(Session.objects.all().delete)()
        await sync_to_async(events.push_users_changed)([user.pk])
        assert await communicator.receive_output(timeout=5) == CLOSED

    async_to_sync(go)()


def test_a_failed_check_is_tried_again_at_the_next(settings, monkeypatch):
    settings.RYSH_WS_RECHECK_SECONDS = 0.2
    _, _, cookie = logged_in("ann")
    real, calls = consumers._recheck, []

    def flaky(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("database is locked")
        return real(*args)

    monkeypatch.setattr(consumers, "_recheck", flaky)

    async def go():
        communicator, _ = await opened("/ws/live/", cookie)
        await sync_to_async(Session.objects.all().delete)()
        assert await communicator.receive_output(timeout=5) == CLOSED
        assert len(calls) >= 2

    async_to_sync(go)()


def test_the_sockets_of_one_session_share_their_periodic_check(settings, monkeypatch):
    """Many open tabs of one person check together on the period's boundaries: one check a
    period for all of them, not one per socket (what 100 idle dashboards cost)."""
    settings.RYSH_WS_RECHECK_SECONDS = 0.5
    _, _, cookie = logged_in("ann")
    real, calls = consumers._recheck, []

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(consumers, "_recheck", counted)

    async def go():
        sockets = [(await opened(path, cookie))[0] for path in ("/ws/live/", "/ws/nav/", "/ws/approvals/") * 2]
        calls.clear()
        await asyncio.sleep(1.6)  # three periods at least, one starting late
        assert 2 <= len(calls) <= 4  # six sockets checking alone would have made 18
        for communicator in sockets:
            assert await communicator.receive_nothing(timeout=0.05)  # nobody was closed or moved
            await communicator.disconnect()

    async_to_sync(go)()
