"""The one place that records a RunEvent and pushes it live.

Pushes carry only ids; consumers render current state from the database, so a lost or
late push costs nothing but latency and a reconnecting browser needs no replay.
"""
from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from runs.models import Run, RunEvent

log = logging.getLogger(__name__)
RUNS_GROUP = "runs"


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def record(run: Run, kind: str, message: str = "", **data) -> RunEvent:
    event = RunEvent.objects.create(run=run, kind=kind, message=message, data=data)
    push(run.pk, event.pk, kind)
    return event


def push(run_id: int, event_id: int | None, kind: str) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    payload = {"type": "run.changed", "run_id": run_id, "event_id": event_id, "kind": kind}

    async def send_both():
        for group in (RUNS_GROUP, run_group(run_id)):
            await layer.group_send(group, payload)

    try:
        async_to_sync(send_both)()  # one loop hop for both groups
    except Exception:  # a push is best effort: the database already holds the truth
        log.warning("live push failed for run %s", run_id, exc_info=True)
