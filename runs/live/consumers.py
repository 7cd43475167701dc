"""Websocket consumers: thin. Refuse anonymous users and users who may not view, then hand the
socket to this process's live hub (runs/live/hub.py), which sends the current state at once and again
whenever a run the page shows changes.

A socket neither polls nor renders: the hub tails the RunEvent log once per process (the
embedded default) or hears workers' pushes through channels_redis, renders each affected view —
a page and the permissions its fragments read — once, and offers that HTML to every socket of
the view. What a socket is sent is decided here, at connect: the page from the URL and the
grants from the user's role, so one role's HTML never reaches a socket of another.

And decided again while the socket is open: its session, user and role are checked every
RYSH_WS_RECHECK_SECONDS (on the period's boundaries, one check for all the sockets of a session), and at once when a web process records a logout, a deactivation or a
role change (the hub relays it: runs/events.py, runs/receivers.py). A session that ended (logout,
expiry, a password change) or a user who was deactivated or deleted closes the socket (4401, which
the page does not reconnect on); other grants move it to the view they allow.
"""

from __future__ import annotations

import asyncio
import logging
from importlib import import_module
from types import SimpleNamespace

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user

from runs.live import fragments, hub
from runs.models import Run
from rysh_site.roles import user_can

log = logging.getLogger(__name__)
UNAUTHORISED = 4401
SHARE_SECONDS = 0.5  # a periodic check this recent (or in flight) answers for its session's other sockets


class LiveConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORISED)
            return
        self.run_id = self.scope["url_route"]["kwargs"].get("run_id")
        self.page = "run" if self.run_id is not None else self.scope["url_route"]["kwargs"].get("view", "home")
        refused, grants = await database_sync_to_async(_admit)(user, self.run_id)
        if refused:
            await self.close(code=refused)
            return
        await self.accept()
        self.outbox = hub.Outbox(self._send_html, user_id=user.pk)
        self.sender = asyncio.ensure_future(self.outbox.pump())
        self.hub = hub.hub()
        await self.hub.join(self.outbox, hub.view_of(self.page, self.run_id, grants))
        self.guard = asyncio.ensure_future(self._guard(self.scope["session"].session_key, user.pk))

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
            guard = self.__dict__.get("guard")
            if guard is not None and guard is not asyncio.current_task():  # the guard leaves by itself
                guard.cancel()
            await self.hub.leave(box)

    async def _guard(self, session_key: str | None, user_id: int) -> None:
        """Check the session, user and role again every RYSH_WS_RECHECK_SECONDS, or at once when
        the hub says this user changed; close, or move to the view the new grants allow."""
        box = self.outbox
        loop = asyncio.get_running_loop()
        while True:
            period = settings.RYSH_WS_RECHECK_SECONDS
            try:  # on the period's boundaries, so that the sockets of one session check together
                await asyncio.wait_for(box.recheck.wait(), timeout=period - loop.time() % period)
                periodic = False
            except TimeoutError:
                periodic = True
            box.recheck.clear()
            try:
                if periodic:
                    grants = await _recheck_shared(session_key, user_id, min(SHARE_SECONDS, period / 4))
                else:  # told of a change: a check of its own, from now
                    grants = await database_sync_to_async(_recheck)(session_key, user_id)
            except Exception:  # the database busy or away: the next check tries again
                log.warning("live: re-checking a socket's user failed", exc_info=True)
                continue
            if grants is None:
                await self._leave()  # nothing more is sent, then the socket closes
                await self.close(code=UNAUTHORISED)
                return
            self.hub.move(box, hub.view_of(self.page, self.run_id, grants))

    async def receive(self, text_data=None, bytes_data=None):
        pass  # the page only listens

    async def _send_html(self, html: str) -> None:
        await self.send(text_data=html)


def _admit(user, run_id: int | None) -> tuple[int, frozenset[str]]:
    """(a close code or 0, the user's live grants): one trip to the database thread."""
    if not user_can(user, "view"):
        return UNAUTHORISED, frozenset()
    if run_id is not None and not Run.objects.filter(pk=run_id).exists():
        return 4404, frozenset()
    return 0, fragments.grants(user)


_shared: dict[tuple[str | None, int], tuple[asyncio.AbstractEventLoop, float, asyncio.Future]] = {}


async def _recheck_shared(session_key: str | None, user_id: int, share: float) -> frozenset[str] | None:
    """The periodic check, once for all the sockets of a session: 100 open tabs of two people
    make two checks a period, not 100. A check of the same session and user begun less than
    `share` seconds ago, or still in flight, answers for this socket too."""
    loop = asyncio.get_running_loop()
    now, key = loop.time(), (session_key, user_id)
    held = _shared.get(key)
    if held is not None and held[0] is loop and now - held[1] < share:
        return await asyncio.shield(held[2])
    for old in [k for k, (lp, at, _f) in _shared.items() if lp is not loop or now - at >= share]:
        del _shared[old]  # only the checks of the moment are kept
    future = asyncio.ensure_future(database_sync_to_async(_recheck)(session_key, user_id))
    _shared[key] = (loop, now, future)
    return await asyncio.shield(future)


def _recheck(session_key: str | None, user_id: int) -> frozenset[str] | None:
    """The socket user's live grants now, or None when the socket must close: its session ended
    (logged out, expired, flushed by a password change), belongs to someone else now, or its user
    was deactivated or deleted. As an HTTP request would see it (django.contrib.auth.get_user on
    the session as stored now): three small queries, in the database thread."""
    if not session_key:
        return None
    stored = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()  # {}: gone or expired
    user = get_user(SimpleNamespace(session=_ReadOnlySession(stored)))
    if not user.is_authenticated or user.pk != user_id or not user_can(user, "view"):
        return None
    return fragments.grants(user)


class _ReadOnlySession(dict):
    """A session's data as get_user reads it, without get_user's writes (a flush on a stale hash,
    a new key when only an old SECRET_KEY verifies it): a socket has no response to carry a new
    cookie, and the browser's next request does both itself."""

    def flush(self) -> None:
        pass

    def cycle_key(self) -> None:
        pass
