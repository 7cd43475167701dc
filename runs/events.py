"""The one place that records a RunEvent and pushes it live.

Pushes carry only ids; consumers render current state from the database, so a lost or
late push costs nothing but latency and a reconnecting browser needs no replay. A push
leaves only once the transaction that wrote its event has committed: a browser told of a
change always finds it in the database.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from runs.models import Run, RunEvent

log = logging.getLogger(__name__)
RUNS_GROUP = "runs"


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def record(run: Run, kind: str, message: str = "", **data) -> RunEvent:
    event = RunEvent.objects.create(run=run, kind=kind, message=message, data=data)
    # outside a transaction this runs at once; inside one, after it commits (never on rollback)
    transaction.on_commit(lambda: push(run.pk, event.pk, kind))
    return event


def push(run_id: int, event_id: int | None, kind: str) -> None:
    layer = get_channel_layer()
    groups = (RUNS_GROUP, run_group(run_id))
    if layer is None or _nobody_here(layer, groups):
        return
    payload = {"type": "run.changed", "run_id": run_id, "event_id": event_id, "kind": kind}

    async def send_both():
        for group in groups:
            await layer.group_send(group, payload)

    try:
        async_to_sync(send_both)()  # one loop hop for both groups
    except Exception:  # a push is best effort: the database already holds the truth
        log.warning("live push failed for run %s", run_id, exc_info=True)


def _nobody_here(layer, groups: tuple[str, ...]) -> bool:
    """The in-memory layer reaches the sockets of this process only. With none in these groups
    (always so in a worker: its sockets tail the event log instead) the push would go nowhere;
    skipping it saves a trip through an event loop on every step."""
    return isinstance(layer, InMemoryChannelLayer) and not any(layer.groups.get(g) for g in groups)
