"""The live hub (runs/live/hub.py): one tail per web process, started with the first socket and
stopped with the last; one render per change and view (page x the permissions it reads), the
same HTML to every socket of the view; a stuck socket delays nobody; nothing waits before a
render."""

import asyncio
import threading
from collections import Counter

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import Group, User
from django.db import transaction

from runs import events
from runs.live import fragments, hub
from runs.live.consumers import LiveConsumer
from runs.models import Run, RunEvent
from tests.runs.test_consumers import ORIGIN, connect, make_run, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)
BUTTON = "data-control-url"  # every control button carries one


def user_with(name: str, role: str | None = None) -> User:
    user = User.objects.create_user(name, password="x")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def renders(monkeypatch):
    """Counts renders by (page, run id, grants), whole or of a run page's sections
    (runs/live/sections.py); each is still the real render."""
    counted = Counter()
    real, real_sections = fragments.fragments, fragments.run_sections

    def counting(page, run_id, can):
        counted[(page, run_id, can)] += 1
        return real(page, run_id, can)

    def counting_sections(run_id, can, wanted):
        counted[("run", run_id, can)] += 1
        return real_sections(run_id, can, wanted)

    monkeypatch.setattr(fragments, "fragments", counting)
    monkeypatch.setattr(fragments, "run_sections", counting_sections)
    return counted


def change(run: Run, **fields) -> None:
    """What a worker in another process does: write the state and record an event, in one
    transaction (one commit), and push nothing to this process."""
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(**fields)
        RunEvent.objects.create(run=run, kind="note", message=f"changed {fields}")


def test_it_renders_a_change_once_for_every_socket_of_a_view(settings, renders):
    settings.RYSH_LIVE_POLL_MS = 20
    cookies = [session_cookie(user_with(f"viewer{i}")) for i in range(5)]
    run = make_run()

    async def go():
        sockets = []
        for cookie in cookies:
            communicator, connected, _ = await connect("/ws/live/", [ORIGIN, cookie])
            assert connected
            await communicator.receive_from(timeout=5)
            sockets.append(communicator)
        renders.clear()
        await sync_to_async(change)(run, state="paused", pause_reason="cancelled")
        got = [await communicator.receive_from(timeout=5) for communicator in sockets]
        assert all("paused(cancelled)" in html for html in got) and len(set(got)) == 1
        assert renders == {("home", None, frozenset()): 1}
        for communicator in sockets:
            await communicator.disconnect()

    async_to_sync(go)()


def test_each_set_of_permissions_gets_its_own_render_and_a_viewer_no_buttons(settings, renders):
    settings.RYSH_LIVE_POLL_MS = 20
    viewer, editor, operator = user_with("vi"), user_with("ed", "editor"), user_with("op", "operator")
    run = make_run()
    path = f"/ws/runs/{run.pk}/"

    async def go():
        sockets = {}
        for name, user in (("viewer", viewer), ("editor", editor), ("operator", operator)):
            communicator, connected, _ = await connect(path, [ORIGIN, await sync_to_async(session_cookie)(user)])
            assert connected
            sockets[name] = (communicator, await communicator.receive_from(timeout=5))
        assert BUTTON in sockets["operator"][1]
        assert BUTTON not in sockets["viewer"][1] and BUTTON not in sockets["editor"][1]
        renders.clear()
        await sync_to_async(change)(run, last_verdict="NO")
        got = {name: await communicator.receive_from(timeout=5) for name, (communicator, _) in sockets.items()}
        assert all('<span id="run-verdict">NO</span>' in html for html in got.values())
        assert BUTTON in got["operator"] and BUTTON not in got["viewer"]
        assert BUTTON not in got["editor"]  # an editor reads neither "operate" nor "audit" here: "label", "edit"
        # one render for each set of grants: the viewer's, the editor's (labels), the operator's
        assert renders == {
            ("run", run.pk, frozenset()): 1,
            ("run", run.pk, frozenset({"label", "edit"})): 1,
            ("run", run.pk, frozenset({"operate", "audit", "label"})): 1,
        }
        for communicator, _ in sockets.values():
            await communicator.disconnect()

    async_to_sync(go)()


def test_a_stuck_socket_delays_no_other_and_gets_only_the_newest_state(settings, monkeypatch):
    settings.RYSH_LIVE_POLL_MS = 20
    stuck_user, other_user = user_with("stuck"), user_with("other")
    run = make_run()
    gates = {}
    real_send = LiveConsumer._send_html

    async def send(self, html):
        if b"stuck" in self.scope["query_string"] and self.__dict__.setdefault("sends", 0):
            gates["stuck"].set()  # its second send hangs until the test lets it go
            await gates["release"].wait()
        self.sends = 1
        await real_send(self, html)

    monkeypatch.setattr(LiveConsumer, "_send_html", send)

    async def go():
        gates.update(stuck=asyncio.Event(), release=asyncio.Event())
        stuck, _, _ = await connect(
            f"/ws/runs/{run.pk}/?stuck", [ORIGIN, await sync_to_async(session_cookie)(stuck_user)]
        )
        other, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, await sync_to_async(session_cookie)(other_user)])
        await stuck.receive_from(timeout=5)
        await other.receive_from(timeout=5)
        for n, verdict in enumerate(("A", "B", "C")):
            await sync_to_async(change)(run, last_verdict=verdict)
            assert f'<span id="run-verdict">{verdict}</span>' in await other.receive_from(timeout=5)
            if n == 0:
                await gates["stuck"].wait()  # the stuck socket is inside its send of A
        gates["release"].set()
        assert '<span id="run-verdict">A</span>' in await stuck.receive_from(timeout=5)
        assert '<span id="run-verdict">C</span>' in await stuck.receive_from(timeout=5)  # B was dropped
        await stuck.disconnect()
        await other.disconnect()

    async_to_sync(go)()


def test_the_hub_and_its_tail_start_with_the_first_socket_and_stop_with_the_last():
    cookie = session_cookie(user_with("ann"))
    layer = get_channel_layer()

    async def go():
        first, _, _ = await connect("/ws/live/", [ORIGIN, cookie])
        await first.receive_from(timeout=5)
        the_hub = hub.hub()
        assert the_hub.running and the_hub.tail is not None and layer.groups.get(events.RUNS_GROUP)
        tasks = list(the_hub.tasks)
        second, _, _ = await connect("/ws/approvals/", [ORIGIN, cookie])
        await second.receive_from(timeout=5)
        assert hub.hub() is the_hub and the_hub.tasks == tasks  # one tail per process, not per socket
        await first.disconnect()
        assert the_hub.running
        await second.disconnect()
        assert not the_hub.running and the_hub.tail is None and not layer.groups.get(events.RUNS_GROUP)
        await asyncio.gather(*tasks, return_exceptions=True)
        assert all(task.cancelled() for task in tasks)

    async_to_sync(go)()


def test_an_idle_tail_queries_nothing_until_someone_commits(settings, monkeypatch):
    settings.RYSH_LIVE_POLL_MS = 20
    cookie = session_cookie(user_with("eve"))
    run = make_run()
    looks, polls, gates = [], [], {}
    real_changed, real_poll = hub.CommitProbe.changed, hub.EventTail.poll

    def changed(self):
        looks.append(real_changed(self))
        if len(looks) == 6:
            gates["ticked"].set()
        return looks[-1]

    def poll(self):
        polls.append(self.last_id)
        return real_poll(self)

    monkeypatch.setattr(hub.CommitProbe, "changed", changed)
    monkeypatch.setattr(hub.EventTail, "poll", poll)

    async def go():
        gates["ticked"] = asyncio.Event()
        communicator, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        await communicator.receive_from(timeout=5)
        await gates["ticked"].wait()  # the first look at start, then five ticks
        assert looks == [True] + [False] * 5 and polls == [None]  # only the baseline query
        await sync_to_async(change)(run, last_verdict="NO")  # another connection commits
        assert '<span id="run-verdict">NO</span>' in await communicator.receive_from(timeout=5)
        assert len(polls) == 2  # that commit's tick, and no other tick queried
        await communicator.disconnect()

    async_to_sync(go)()


def test_the_first_push_after_a_quiet_spell_is_sent_without_waiting(settings, monkeypatch):
    settings.RYSH_LIVE_TAIL = False  # only the push can deliver it
    slept = []

    async def never(seconds):
        slept.append(seconds)
        await asyncio.Event().wait()

    monkeypatch.setattr(hub, "sleep", never)  # a debounce before the render would hang here
    cookie = session_cookie(user_with("cy"))
    run = make_run()

    async def go():
        communicator, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        await communicator.receive_from(timeout=5)
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(last_verdict="YES")
        await sync_to_async(events.push)(run.pk, None, "verdict")
        assert '<span id="run-verdict">YES</span>' in await communicator.receive_from(timeout=5)
        await communicator.disconnect()

    async_to_sync(go)()
    assert set(slept) <= {hub.GROUP_REFRESH_SECONDS}  # only the hourly group refresh ever waits


def test_changes_during_a_render_are_coalesced_into_one_more(settings, monkeypatch):
    settings.RYSH_LIVE_TAIL = False
    cookie = session_cookie(user_with("dee"))
    run = make_run()
    calls, started, gate = [], threading.Event(), threading.Event()

    def slow(page, run_id, can):
        calls.append(page)
        if len(calls) == 2:  # the first change's render: in flight until the test lets it go
            started.set()
            gate.wait(10)
        return f"<p>render {len(calls)}</p>"

    monkeypatch.setattr(fragments, "fragments", slow)

    async def go():
        layer = get_channel_layer()
        communicator, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        assert await communicator.receive_from(timeout=5) == "<p>render 1</p>"
        # a note: a kind that renders the whole fragment (runs/live/sections.py), as `slow` stands in for
        nudge = {"type": "run.changed", "run_id": run.pk, "event_id": None, "kind": "note"}
        await layer.group_send(events.RUNS_GROUP, nudge)
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        heard = asyncio.Event()
        the_hub, seen = hub.hub(), []
        real_changed = the_hub.changed

        def changed(run_ids, kinds=None):
            real_changed(run_ids, kinds)
            seen.append(run_ids)
            if len(seen) == 3:
                heard.set()

        the_hub.changed = changed
        for _ in range(3):
            await layer.group_send(events.RUNS_GROUP, nudge)
        await heard.wait()  # three changes arrived while render 2 was in flight
        gate.set()
        assert await communicator.receive_from(timeout=5) == "<p>render 2</p>"
        assert await communicator.receive_from(timeout=5) == "<p>render 3</p>"
        assert len(calls) == 3
        await communicator.disconnect()

    async_to_sync(go)()


def test_with_redis_a_workers_push_wakes_the_hub_which_renders_once_for_both_sockets(settings, redis_url, renders):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}}
    }
    settings.RYSH_LIVE_TAIL = False  # as with REDIS_URL: nothing tails
    cookies = [session_cookie(user_with(f"r{i}")) for i in range(2)]
    run = make_run()

    async def go():
        sockets = []
        for cookie in cookies:
            communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
            assert connected
            await communicator.receive_from(timeout=5)
            sockets.append(communicator)
        renders.clear()
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(last_verdict="YES")
        await sync_to_async(events.push)(run.pk, None, "verdict")  # as a worker does, through Redis
        for communicator in sockets:
            assert '<span id="run-verdict">YES</span>' in await communicator.receive_from(timeout=5)
        assert renders == {("run", run.pk, frozenset()): 1}
        for communicator in sockets:
            await communicator.disconnect()

    async_to_sync(go)()
