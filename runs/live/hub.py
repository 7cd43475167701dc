"""One live hub per web process: learns which runs changed, renders each affected view once,
and offers that HTML to every socket of the view.

Sockets do not watch the database themselves (with 60 open tabs, 60 tails cost daphne most of a
core while nothing ran). The hub starts with the first socket and stops with the last. It learns
that runs changed from:
- the RunEvent log (RYSH_LIVE_TAIL, the embedded default: no server carries workers' pushes
  across processes), read when a writer wakes the hub after its commit (a datagram on the hub's
  socket in RYSH_LIVE_WAKE_DIR: runs/live/wake.py) and, as a safety net for a lost wake-up, once
  per RYSH_LIVE_POLL_MS. On SQLite `PRAGMA data_version`, asked from the event loop, says whether
  anyone committed since the last look, so an idle tick reads no table and needs no thread; only
  then does a thread of the hub's own query RunEvent;
- the channel layer's RUNS_GROUP, which the hub joins (not each socket): workers' pushes through
  channels_redis, and on the embedded default the pushes of this server's own controls. The same
  group says when users logged out or their roles changed: the hub has those users' sockets
  check their session and roles again (runs/live/consumers.py), and moves a socket whose grants
  changed to its new view.
Either way it learns run ids only. A view is a page seen with the permissions its fragments read
(fragments.READS); every view the change concerns renders once, from the database, and offers the same
HTML to each of its sockets. A socket's outbox keeps only the newest HTML, so a slow or stuck
socket skips states instead of delaying the others. Only what changed is sent: a render is
split into its top-level elements (each has a stable id and is swapped out of band on its own),
and a socket that has its view's first state is sent the elements whose HTML differs from the last
render; its outbox keeps the newest HTML of each element. Nothing waits before a render: the first
change after a quiet spell is rendered at once; changes that arrive while a render is in flight
are coalesced into the one render after it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
from asyncio import sleep  # the hub's only waits: a tail's tick, a retry, the group refresh
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.db.models import Max, Min

from runs import events
from runs.live import fragments, sections, wake
from runs.models import RunEvent
from rysh_site import metrics

log = logging.getLogger(__name__)
RETRY_SECONDS = 0.5
GROUP_REFRESH_SECONDS = 3600  # channels_redis forgets a group's members after group_expiry (a day)


# -- the pure core: views, what a change concerns, a socket's outbox ---------------------------------


@dataclass(frozen=True)
class View:
    """What a socket shows: a page (home | run | approvals | nav; run_id on a run's page) and the
    permissions its fragments read. Sockets with equal views are sent the same HTML."""

    page: str
    run_id: int | None = None
    grants: frozenset[str] = frozenset()


def view_of(page: str, run_id: int | None, grants: frozenset[str]) -> View:
    """Only the grants the page reads: a viewer and an editor see the same home page, one render."""
    return View(page, run_id, frozenset(grants) & fragments.READS[page])


def concerns(view: View, run_ids: Iterable[int]) -> bool:
    """A run's change shows on its own page and on every page that lists runs or counts approvals."""
    return view.page != "run" or view.run_id in run_ids


# a tag (its attributes may quote a ">") or a comment; void elements have no closing tag
_TAG = re.compile(r"""<!--.*?-->|<(/?)([a-zA-Z][\w:-]*)((?:[^>"']|"[^"]*"|'[^']*')*?)(/?)>""", re.S)
_ID = re.compile(r"""\sid=["']([^"']+)["']""")
_VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())


def split(html: str) -> dict[str, str] | None:
    """A push's top-level elements by their id, in order, or None when it does not split cleanly
    (text or an element without an id at the top, unbalanced tags): then it goes whole."""
    parts: dict[str, str] = {}
    depth, start, key, end = 0, 0, "", 0
    for tag in _TAG.finditer(html):
        closing, name, attrs, self_closing = tag.groups()
        if name is None:  # a comment
            continue
        if closing:
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                if key in parts:
                    return None
                parts[key], end = html[start : tag.end()], tag.end()
        elif name.lower() in _VOID or self_closing:
            if depth == 0:
                return None
        else:
            if depth == 0:
                found = _ID.search(attrs)
                if found is None or html[end : tag.start()].strip():
                    return None
                start, key = tag.start(), found.group(1)
            depth += 1
    if depth or html[end:].strip() or not parts:
        return None
    return parts


def changed_parts(last: dict[str, str], parts: dict[str, str]) -> dict[str, str]:
    return {key: html for key, html in parts.items() if last.get(key) != html}


class Outbox:
    """One socket's mailbox: the newest HTML of each element waits, an older one is replaced.
    It also carries whose socket it is and a flag the hub raises when that user's session or
    roles may have changed (the socket then checks them again: runs/live/consumers.py)."""

    def __init__(self, send: Callable[[str], Awaitable[None]], user_id: int | None = None):
        self.send = send
        self.user_id = user_id
        self.pending: dict[str, str] = {}
        self.fed = False  # offered anything yet: a new socket is owed its first state, changed or not
        self.ready = asyncio.Event()
        self.recheck = asyncio.Event()

    def offer(self, parts: dict[str, str]) -> None:
        self.pending.update(parts)
        self.fed = True
        self.ready.set()

    def drop(self) -> None:
        """Forget what waits: it was rendered for a view this socket no longer has."""
        self.pending, self.fed = {}, False
        self.ready.clear()

    async def pump(self) -> None:
        """The socket's one sending task: sends never overlap, so an older state never lands last."""
        while True:
            await self.ready.wait()
            self.ready.clear()
            parts, self.pending = self.pending, {}
            if not parts:  # dropped between the wake-up and now
                continue
            try:
                await self.send("".join(parts.values()))
            except Exception:  # the socket is going away; its disconnect stops this task
                log.debug("live send failed", exc_info=True)
                return


class Feed:
    """One view's renders: at most one in flight; what changes meanwhile makes one more after it.
    A render is of the sections the changes since the last one can touch (runs/live/sections.py;
    None: all of them), and all of them whenever a socket still waits for its first state."""

    def __init__(self, view: View, render: Callable[[View, frozenset[str] | None], Awaitable[str]]):
        self.view = view
        self.render = render
        self.outboxes: set[Outbox] = set()
        self.dirty = asyncio.Event()
        self.wanted: frozenset[str] | None = frozenset()  # what the next render must include
        self.last: dict[str, str] = {}  # the newest HTML of each element rendered, by its id
        self.written: tuple[float, str] | None = None  # the oldest change not yet rendered (metrics)
        self.task = asyncio.ensure_future(self._run())

    def mark(self, wanted: frozenset[str] | None = None) -> None:
        """Render again, at least these sections (None: the whole fragment)."""
        self.wanted = sections.union(self.wanted, wanted)
        self.dirty.set()

    async def _run(self) -> None:
        while True:
            await self.dirty.wait()
            self.dirty.clear()
            written, self.written = self.written, None
            wanted, self.wanted = self.wanted, frozenset()
            if not wanted or not self.last or not all(box.fed for box in self.outboxes):
                wanted = None  # a socket is owed its first state, whole
            try:
                html = await self.render(self.view, wanted)
            except Exception:  # one bad render must not silence the view for good
                log.exception("live render failed for %s", self.view)
                await sleep(RETRY_SECONDS)
                self.mark(wanted)
                continue
            parts = split(html) or {"": html}
            changed = changed_parts(self.last, parts)
            self.last = parts if wanted is None else {**self.last, **parts}
            for box in self.outboxes:
                # A socket that joined while this render was in flight may take it as its first
                # state (all of it): the render began after the socket's admission (renders and
                # admissions share channels' one database thread), so after its page was served.
                if not box.fed:
                    box.offer(parts)
                elif changed:
                    box.offer(changed)
            metrics.push_sent(written if changed else None)


# -- the edges: the database tail, the channel layer, rendering ------------------------------------


class CommitProbe:
    """Has anyone committed to the database since the last ask? SQLite's `PRAGMA data_version`, on
    a connection of the probe's own (the value compares commits seen by one connection), asked
    from the event loop: a read of the WAL index, so an idle tick needs no thread hop and reads no
    table. Where it cannot tell (PostgreSQL, SQLite in memory) it says yes: the tail then makes
    its one query, an index range on RunEvent's primary key."""

    def __init__(self, vendor: str, name: str):
        self.db = None
        self.version: int | None = None
        if vendor == "sqlite" and name != ":memory:" and "mode=memory" not in name:
            # a short busy timeout: this runs on the event loop, which must never wait on a lock
            self.db = sqlite3.connect(name, timeout=0.05, isolation_level=None, check_same_thread=False)

    def changed(self) -> bool:
        if self.db is None:
            return True
        try:
            version = self.db.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:  # busy or gone: let the tail's query decide
            return True
        changed, self.version = version != self.version, version
        return changed

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


class EventTail:
    """Which runs have new RunEvents since the last look. Called from the hub's tail thread only,
    which keeps its connection (no close_old_connections around each look)."""

    def __init__(self):
        self.last_id: int | None = None
        self.written: float | None = None  # when the oldest event of the last look was written
        self.kinds: dict[int, set[str]] = {}  # the last look's runs and the kinds of their new events

    def poll(self) -> set[int]:
        if self.last_id is None:  # the baseline: what the first renders already include
            self.last_id = RunEvent.objects.aggregate(top=Max("id"))["top"] or 0
            return set()
        newest = list(
            RunEvent.objects.filter(id__gt=self.last_id)
            .values("run_id", "kind")
            .annotate(top=Max("id"), at=Min("created_at"))
            .values_list("run_id", "kind", "top", "at")
        )
        self.kinds = {}
        for run_id, kind, _top, _at in newest:
            self.kinds.setdefault(run_id, set()).add(kind)
        self.last_id = max((top for _run, _kind, top, _at in newest), default=self.last_id)
        self.written = min((at for _run, _kind, _top, at in newest), default=None)
        return set(self.kinds)

    @staticmethod
    def close() -> None:
        connection.close()


def _render(view: View, wanted: frozenset[str] | None = None) -> str:
    if wanted is not None and view.page == "run":
        return fragments.run_sections(view.run_id, view.grants, wanted)
    return fragments.fragments(view.page, view.run_id, view.grants)


async def render(view: View, wanted: frozenset[str] | None = None) -> str:
    return await database_sync_to_async(_render)(view, wanted)


class Hub:
    def __init__(self, *, tail: bool, poll_seconds: float, layer=None):
        self.loop = asyncio.get_running_loop()
        self.tail_on, self.poll_seconds, self.layer = tail, poll_seconds, layer
        self.members: dict[Outbox, View] = {}
        self.feeds: dict[View, Feed] = {}
        self.started: asyncio.Future | None = None
        self.tasks: list[asyncio.Future] = []
        self.tail: EventTail | None = None
        self.probe: CommitProbe | None = None
        self.thread: ThreadPoolExecutor | None = None
        self.channel: str | None = None
        self.wake = asyncio.Event()  # a writer committed: read the log now, not at the next tick
        self.listener: wake.Listener | None = None

    @property
    def running(self) -> bool:
        return self.started is not None

    async def join(self, box: Outbox, view: View) -> None:
        self.members[box] = view  # a member from now on: a leaving socket cannot stop the hub under us
        if self.started is None:
            self.started = asyncio.ensure_future(self._start())
        try:
            await asyncio.shield(self.started)
        except asyncio.CancelledError:  # the socket went while the hub started: it never joined
            asyncio.ensure_future(self.leave(box))
            raise
        self._attach(box, view)

    async def leave(self, box: Outbox) -> None:
        self._detach(box, self.members.pop(box, None))
        if not self.members and self.started is not None:
            await self._stop()

    def move(self, box: Outbox, view: View) -> None:
        """The socket's user holds other grants now: it leaves its feed for the new view's and is
        sent that view's current state. Nothing rendered for the old view reaches it after this
        (what waited in its outbox is dropped), bar a send already under way."""
        old = self.members.get(box)
        if old is None or old == view:
            return
        self._detach(box, old)
        self.members[box] = view
        box.drop()
        self._attach(box, view)

    def _attach(self, box: Outbox, view: View) -> None:
        feed = self.feeds.get(view) or self.feeds.setdefault(view, Feed(view, render))
        feed.outboxes.add(box)
        feed.mark()  # its first state, current as of now (unchanged HTML goes to this socket only)

    def _detach(self, box: Outbox, view: View | None) -> None:
        feed = self.feeds.get(view)
        if feed is not None:
            feed.outboxes.discard(box)
            if not feed.outboxes:
                feed.task.cancel()
                del self.feeds[view]

    def users_changed(self, user_ids: Iterable[int] | None) -> None:
        """A logout, a deactivation or a role change (None: maybe anyone's, a group renamed or
        deleted): the sockets of those users check their session and roles again now."""
        ids = None if user_ids is None else set(user_ids)
        for box in self.members:
            if ids is None or box.user_id in ids:
                box.recheck.set()

    def changed(self, run_ids: Iterable[int], kinds: Mapping[int, Iterable[str]] | None = None) -> None:
        """These runs changed; `kinds`, where known, the kinds of the events recorded for each: a
        run's page then renders only the sections they can touch (runs/live/sections.py)."""
        run_ids = set(run_ids)
        for feed in self.feeds.values():
            if concerns(feed.view, run_ids):
                known = None if kinds is None or feed.view.page != "run" else kinds.get(feed.view.run_id)
                feed.mark(sections.sections_for(known))

    def written(self, run_ids: Iterable[int], at: float | None, path: str) -> None:
        """When (time.time()) the oldest of these runs' changes was written, and how the hub
        learned of it (tail | channel): for the push latency metric (rysh_site/metrics.py)."""
        run_ids = set(run_ids)
        for feed in self.feeds.values():
            if at is not None and concerns(feed.view, run_ids):
                feed.written = min(filter(None, (feed.written, (at, path))))

    async def _start(self) -> None:
        if self.tail_on:
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rysh-live-tail")
            self.tail = EventTail()
            self.probe = CommitProbe(connection.vendor, str(connection.settings_dict["NAME"]))
            self.probe.changed()  # its first answer, before the baseline: a commit between is seen
            self.listener = wake.Listener(settings.RYSH_LIVE_WAKE_DIR)  # before the baseline, likewise
            self.listener.attach(self.loop, self.wake.set)
            await self._poll()  # the baseline is read before any render, so no event falls between
            self.tasks.append(asyncio.ensure_future(self._tail()))
        if self.layer is not None:
            self.channel = await self.layer.new_channel()
            await self._join_group()
            self.tasks.append(asyncio.ensure_future(self._listen()))
            self.tasks.append(asyncio.ensure_future(self._refresh_group()))

    async def _stop(self) -> None:
        started, tasks, thread, tail, channel = self.started, self.tasks, self.thread, self.tail, self.channel
        self.started, self.tasks, self.thread, self.tail, self.channel = None, [], None, None, None
        for task in (started, *tasks):
            task.cancel()
        if self.probe is not None:
            self.probe.close()
            self.probe = None
        if self.listener is not None:
            self.listener.close(self.loop)
            self.listener = None
        if thread is not None:
            thread.submit(tail.close)  # the tail thread's own connection
            thread.shutdown(wait=False)
        if channel is not None:
            try:
                await self.layer.group_discard(events.RUNS_GROUP, channel)
            except Exception:
                log.warning("live: leaving the runs group failed", exc_info=True)

    async def _poll(self) -> set[int]:
        try:
            return await self.loop.run_in_executor(self.thread, self.tail.poll)
        except Exception:  # e.g. the database is busy: try again at the next tick
            log.exception("live tail failed")
            await self.loop.run_in_executor(self.thread, self.tail.close)
            return set()

    async def _tail(self) -> None:
        while True:
            try:  # woken by a writer, or the safety net's tick
                await asyncio.wait_for(self.wake.wait(), timeout=self.poll_seconds)
            except TimeoutError:
                pass
            self.wake.clear()  # wake-ups during the look below make one more look after it
            if not self.probe.changed():
                continue  # nobody committed: no thread hop, no query
            run_ids = await self._poll()
            if run_ids:
                self.written(run_ids, self.tail.written.timestamp() if self.tail.written else None, "tail")
                self.changed(run_ids, self.tail.kinds)

    async def _join_group(self) -> None:
        try:
            await self.layer.group_add(events.RUNS_GROUP, self.channel)
        except Exception:  # Redis away: the listener's retries and the hourly refresh try again
            log.warning("live: joining the runs group failed", exc_info=True)

    async def _listen(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except Exception:
                log.warning("live: the channel layer failed", exc_info=True)
                await sleep(RETRY_SECONDS)
                continue
            if message.get("type") == "run.changed":
                self.written([message["run_id"]], message.get("at"), "channel")
                kind = message.get("kind")
                self.changed([message["run_id"]], None if kind is None else {message["run_id"]: [kind]})
            elif message.get("type") == events.USERS_CHANGED:
                self.users_changed(message.get("user_ids"))

    async def _refresh_group(self) -> None:
        while True:
            await sleep(GROUP_REFRESH_SECONDS)
            await self._join_group()


_hub: Hub | None = None


def hub() -> Hub:
    """This process's hub (one per event loop: tests run each in a loop of its own), made afresh
    whenever no socket holds it, with the settings of the moment."""
    global _hub
    if _hub is None or _hub.loop is not asyncio.get_running_loop() or not _hub.members:
        _hub = Hub(
            tail=settings.RYSH_LIVE_TAIL, poll_seconds=settings.RYSH_LIVE_POLL_MS / 1000, layer=get_channel_layer()
        )
    return _hub
