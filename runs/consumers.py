"""Websocket consumers: thin. Refuse anonymous users and users who may not view, then hand the
socket to this process's live hub (runs/hub.py), which sends the current state at once and again
whenever a run the page shows changes.

A socket neither polls nor renders: the hub tails the RunEvent log once per process (the
embedded default) or hears workers' pushes through channels_redis, renders each affected view —
a page and the permissions its fragments read — once, and offers that HTML to every socket of
the view. What a socket is sent is decided here, at connect: the page from the URL and the
grants from the user's role, so one role's HTML never reaches a socket of another.
"""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from runs import hub, live
from runs.models import Run
from rysh_site.roles import user_can


class LiveConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        run_id = self.scope["url_route"]["kwargs"].get("run_id")
        page = "run" if run_id is not None else self.scope["url_route"]["kwargs"].get("view", "home")
        refused, grants = await database_sync_to_async(_admit)(user, run_id)
        if refused:
            await self.close(code=refused)
            return
        await self.accept()
        self.outbox = hub.Outbox(self._send_html)
        self.sender = asyncio.ensure_future(self.outbox.pump())
        self.hub = hub.hub()
        await self.hub.join(self.outbox, hub.view_of(page, run_id, grants))

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:  # also when the server cancels the consumer without a disconnect message
            await asyncio.shield(self._leave())

    async def disconnect(self, code):
        await self._leave()

    async def _leave(self) -> None:
        box = self.__dict__.pop("outbox", None)  # once only: disconnect, then __call__'s finally
        if box is not None:
            self.sender.cancel()
            await self.hub.leave(box)

    async def receive(self, text_data=None, bytes_data=None):
        pass  # the page only listens

    async def _send_html(self, html: str) -> None:
        await self.send(text_data=html)


def _admit(user, run_id: int | None) -> tuple[int, frozenset[str]]:
    """(a close code or 0, the user's live grants): one trip to the database thread."""
    if not user_can(user, "view"):
        return 4401, frozenset()
    if run_id is not None and not Run.objects.filter(pk=run_id).exists():
        return 4404, frozenset()
    return 0, live.grants(user)
