"""The one place that records a RunEvent and pushes it live.

Pushes carry only ids and go to one group, RUNS_GROUP, which each web process's live hub joins
(runs/hub.py); the hub renders current state from the database, so a lost or late push costs
nothing but latency and a reconnecting browser needs no replay. A push
leaves only once the transaction that wrote its event has committed: a browser told of a
change always finds it in the database.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from runs.models import Run, RunEvent
from rysh_site import tracing

log = logging.getLogger(__name__)
RUNS_GROUP = "runs"
USERS_CHANGED = "users.changed"


def record(run: Run, kind: str, message: str = "", **data) -> RunEvent:
    event = RunEvent.objects.create(run=run, kind=kind, message=message, data=data)
    tracing.run_event(run, kind, message, data)
    # outside a transaction this runs at once; inside one, after it commits (never on rollback)
    transaction.on_commit(lambda: push(run.pk, event.pk, kind))
    return event


def push(run_id: int, event_id: int | None, kind: str) -> None:
    _send({"type": "run.changed", "run_id": run_id, "event_id": event_id, "kind": kind})


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
        async_to_sync(layer.group_send)(RUNS_GROUP, payload)  # one message per web process, not per socket
    except Exception:  # a push is best effort: the database already holds the truth
        log.warning("live push failed: %s", payload, exc_info=True)


def _nobody_here(layer) -> bool:
    """The in-memory layer reaches this process only. With no live hub in it (always so in a
    worker: the web server's hub tails the event log instead) the push would go nowhere;
    skipping it saves a trip through an event loop on every step."""
    return isinstance(layer, InMemoryChannelLayer) and not layer.groups.get(RUNS_GROUP)
