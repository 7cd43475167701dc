"""The one place that records a RunEvent and pushes it live.

Pushes carry only ids and go to one group, RUNS_GROUP, which each web process's live hub joins
(runs/live/hub.py); on the embedded default, where no server carries a worker's push to the web
processes, a datagram to each of them wakes its hub to read the RunEvent log (runs/live/wake.py); the hub renders current state from the database, so a lost or late push costs
nothing but latency and a reconnecting browser needs no replay. A push
leaves only once the transaction that wrote its event has committed: a browser told of a
change always finds it in the database.

Over channels_redis a push is sent from a loop of this process's own, in a thread of its own, so
its connection stays open between pushes: a worker pushes once per step and would otherwise
open a connection to Redis (and find the group's members) every time (asgiref's async_to_sync
makes a new loop per call outside a web request) — about 6 ms a push, against a fraction of one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import transaction

from runs.live import wake
from runs.models import Run, RunEvent
from runs.states import EventKind
from rysh_site import tracing

log = logging.getLogger(__name__)
RUNS_GROUP = "runs"
USERS_CHANGED = "users.changed"
PUSH_SECONDS = 5.0  # a push waits this long for Redis at most: best effort, the database holds the truth
# the kinds a run's trace treats apart (docs/tracing.md), by role
TRACED_KINDS = tracing.EventKinds(
    on_root=(
        EventKind.QUEUED,
        EventKind.REQUEUED,
        EventKind.RUNNING,
        EventKind.CONTROL,
        EventKind.CONTINUED,
        EventKind.GRANTED,
        EventKind.PAUSED,
        EventKind.FINISHED,
    ),
    skipped=(EventKind.STEP,),
    content=(
        EventKind.VERDICT,
        EventKind.APPROVAL_REQUESTED,
        EventKind.APPROVAL_ANSWERED,
        EventKind.APPROVAL_STALE,
    ),
    pass_started=EventKind.PASS_STARTED,
    judging=EventKind.JUDGING,
    verdict=EventKind.VERDICT,
    granted=EventKind.GRANTED,
    finished=EventKind.FINISHED,
)


def record(run: Run, kind: EventKind | str, message: str = "", **data) -> RunEvent:
    kind = str(kind)  # the plain word, as stored and pushed (an EventKind is one)
    event = RunEvent.objects.create(run=run, kind=kind, message=message, data=data)
    tracing.run_event(run, kind, message, data, TRACED_KINDS)
    # outside a transaction this runs at once; inside one, after it commits (never on rollback)
    transaction.on_commit(lambda: push(run.pk, event.pk, kind))
    return event


def push(run_id: int, event_id: int | None, kind: str) -> None:
    # `at`: when it was written (committed), for the push latency metric (rysh_site/metrics.py)
    at = time.time()
    if settings.RYSH_LIVE_TAIL:  # every web process's hub reads the log now (runs/live/wake.py)
        wake.wake_all(settings.RYSH_LIVE_WAKE_DIR)
    _send({"type": "run.changed", "run_id": run_id, "event_id": event_id, "kind": kind, "at": at})


def push_users_changed(user_ids: Iterable[int] | None) -> None:
    """These users logged out, were deactivated or deleted, or their roles changed (None: maybe
    anyone's — a group renamed or deleted): each web process's hub has their sockets check their
    session and roles at once instead of at their next periodic check. After the commit."""
    ids = None if user_ids is None else sorted(set(user_ids))
    transaction.on_commit(lambda: _send({"type": USERS_CHANGED, "user_ids": ids}))


def _send(payload: dict) -> None:
    layer = get_channel_layer()
    if layer is None or _nobody_here(layer):
        return
    try:
        if isinstance(layer, InMemoryChannelLayer):  # its queues belong to the web server's own loop
            async_to_sync(layer.group_send)(RUNS_GROUP, payload)  # one message per web process, not per socket
        else:
            sent = asyncio.run_coroutine_threadsafe(layer.group_send(RUNS_GROUP, payload), _push_loop())
            sent.result(timeout=PUSH_SECONDS)  # waited for: a worker about to exit still sends its last push
    except Exception:  # a push is best effort: the database already holds the truth
        log.warning("live push failed: %s", payload, exc_info=True)


_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_loop_lock = threading.Lock()


def _push_loop() -> asyncio.AbstractEventLoop:
    """This process's push loop, started at its first push (again in a forked child: a fork
    copies the loop but not the thread that runs it)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="rysh-push", daemon=True).start()
            _loop = (os.getpid(), loop)
        return _loop[1]


def _nobody_here(layer) -> bool:
    """The in-memory layer reaches this process only. With no live hub in it (always so in a
    worker: the web server's hub tails the event log instead) the push would go nowhere;
    skipping it saves a trip through an event loop on every step."""
    return isinstance(layer, InMemoryChannelLayer) and not layer.groups.get(RUNS_GROUP)
