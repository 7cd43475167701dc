"""Websocket consumers: thin. Refuse anonymous users, send the current state at once, then
send it again whenever a run changes.

How a change reaches the socket:
- with REDIS_URL, workers push through channels_redis (runs.events.push) and the
  socket joins the groups;
- on the embedded default there is no server to cross processes with, so each socket tails
  the RunEvent log (one indexed query every RYSH_LIVE_POLL_MS); in-process pushes from the
  web server's own controls arrive through the in-memory layer at once. Both paths only say
  "something changed": the consumer renders the current fragments from the database.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from runs import events, live, selectors
from runs.models import Run
from rysh_site.roles import user_can

DEBOUNCE_SECONDS = 0.05
RETRY_SECONDS = 0.5
log = logging.getLogger(__name__)


class LiveConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await database_sync_to_async(user_can)(user, "view"):
            await self.close(code=4401)
            return
        self.run_id = self.scope["url_route"]["kwargs"].get("run_id")
        self.view = self.scope["url_route"]["kwargs"].get("view", "home")  # home | approvals | nav
        if self.run_id is not None and not await database_sync_to_async(Run.objects.filter(pk=self.run_id).exists)():
            await self.close(code=4404)
            return
        self.group = events.run_group(self.run_id) if self.run_id else events.RUNS_GROUP
        self.dirty = asyncio.Event()
        self.immediate = False
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.last_event = await self._last_event_id()
        await self._send_state()
        self.sender = asyncio.ensure_future(self._send_when_dirty())
        self.tail = asyncio.ensure_future(self._tail()) if settings.RYSH_LIVE_TAIL else None

    async def disconnect(self, code):
        for task in (getattr(self, "sender", None), getattr(self, "tail", None)):
            if task is not None:
                task.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_changed(self, message):
        """A push from a worker or a view: only a nudge; the state comes from the database."""
        self.dirty.set()

    async def receive(self, text_data=None, bytes_data=None):
        pass  # the page only listens

    async def _send_when_dirty(self):
        """The one task that sends: renders never overlap, so an older state never lands last."""
        while True:
            await self.dirty.wait()
            if not self.immediate:
                await asyncio.sleep(DEBOUNCE_SECONDS)  # coalesce a burst of pushes into one render
            self.immediate = False
            self.dirty.clear()
            try:
                await self._send_state()
            except asyncio.CancelledError:
                raise
            except Exception:  # one bad render must not silence the socket for good
                log.exception("live render failed for %s", self.group)
                await asyncio.sleep(RETRY_SECONDS)
                self.dirty.set()

    async def _tail(self):
        interval = settings.RYSH_LIVE_POLL_MS / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                latest = await self._last_event_id()
            except Exception:  # e.g. the database is busy: try again at the next tick
                log.exception("live tail failed for %s", self.group)
                continue
            if latest != self.last_event:
                self.last_event = latest
                self.immediate = True  # the poll already waited: no debounce on top of it
                self.dirty.set()

    @database_sync_to_async
    def _last_event_id(self) -> int:
        return selectors.run_event_latest_id(run_id=self.run_id)

    @database_sync_to_async
    def _render(self) -> str:
        user = self.scope["user"]
        if self.view == "approvals":
            return live.inbox_fragments(user) + live.nav_fragment()
        if self.view == "nav":
            return live.nav_fragment()
        if self.run_id is None:
            return live.home_fragments(user)
        return live.run_fragments(Run.objects.get(pk=self.run_id), user)

    async def _send_state(self):
        await self.send(text_data=await self._render())
