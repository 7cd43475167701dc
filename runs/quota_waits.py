"""Runs waiting for a quota to have room (docs/spend.md): which they are and why (the Spend page),
and waking them once their call fits. Spend sits below runs: it says when room may have come
(its quota_released signal, after a settle below what was reserved or a quota or price change)
and runs.receivers wakes them here; the every-minute sweeper calls quota_wake too."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from audit.context import system_action
from budgets.quota import reservation_micros
from runs.models import Run, RunEvent, RunState
from runs.services import RunRefused, run_continue
from runs.states import EventKind
from spend.models import Quota
from spend.prices import micros_per_token
from spend.quotas import QUOTA_PAUSE, applies, current

log = logging.getLogger(__name__)


def paused_on_quota():
    return Run.objects.filter(state=RunState.PAUSED, pause_reason__startswith=QUOTA_PAUSE)


def quota_wake(*, now=None) -> list[str]:
    """Continue the runs paused on a quota whose waiting call now fits every quota that applies
    (the window rolled over, a quota was raised or removed, a price was set, or other calls
    settled below what they had reserved) — oldest first, and only as many as fit together,
    so that a little room wakes one run, not all of them to pause again. Called after settles
    that released a hold, by quota and price changes, and every minute by the sweeper."""
    waiting = list(paused_on_quota().order_by("pk"))
    if not waiting:
        return []
    standing = {q.pk: current(q, now) for q in Quota.objects.select_related("user").order_by("pk")}
    promised: dict[int, tuple[int, int]] = {}  # what the runs woken here will ask each quota for
    needs = _waiting_needs(waiting)
    said = []
    for run in waiting:
        tokens, model = needs.get(run.pk, (0, ""))
        model = model or run.executor_model
        micros = reservation_micros(tokens, micros_per_token(model, tokens))
        applying = [q for q in standing.values() if applies(q, target=run.target, user_id=run.charged_to_id)]
        if not all(_fits_after(q, promised.get(q.pk, (0, 0)), tokens, micros) for q in applying):
            continue
        try:
            with system_action():  # nobody pressed continue: the admin who raised a quota did not either
                said.append(run_continue(run=run))
        except RunRefused as exc:  # continued by hand meanwhile, or its target is busy
            log.info("run %s not woken: %s", run.pk, exc)
            continue
        for q in applying:
            was = promised.get(q.pk, (0, 0))
            promised[q.pk] = (was[0] + tokens, was[1] + (micros or 0))
    return said


def _fits_after(quota: Quota, promised: tuple[int, int], tokens: int, micros: int | None) -> bool:
    held = quota.standing
    return replace(
        held, reserved_tokens=held.reserved_tokens + promised[0], reserved_micros=held.reserved_micros + promised[1]
    ).fits(tokens, micros)


def _waiting_needs(runs: list[Run]) -> dict[int, tuple[int, str]]:
    """What the call each run waits for needs (tokens, model): saved with its `paused` event."""
    needs: dict[int, tuple[int, str]] = {}
    events = RunEvent.objects.filter(run__in=runs, kind=EventKind.PAUSED).order_by("run_id", "-id")
    for run_id, data in events.values_list("run_id", "data"):
        if run_id not in needs:
            needs[run_id] = (int(data.get("need_tokens") or 0), data.get("model") or "")
    return needs


@dataclass
class Waiting:
    run: Run
    why: str


def runs_paused_on_quota() -> list[Waiting]:
    """Runs waiting for a quota to have room, oldest first, with their last `paused` event's
    message (what the call needs and what the quota has left): two queries in all."""
    runs = list(paused_on_quota().select_related("user", "charged_to").order_by("pk"))
    said: dict[int, str] = {}
    events = RunEvent.objects.filter(run__in=runs, kind=EventKind.PAUSED).order_by("run_id", "-id")
    for run_id, message in events.values_list("run_id", "message"):
        said.setdefault(run_id, message)
    return [Waiting(run, _why(run, said.get(run.pk, ""))) for run in runs]


def _why(run: Run, message: str) -> str:
    """The event's message without its `paused(quota: …): ` head, which the state already says."""
    head = f"paused({run.pause_reason}): "
    return message[len(head) :] if message.startswith(head) else message
