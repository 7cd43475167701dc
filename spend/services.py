"""Writes of spend governance: quotas and prices (admins), and waking the runs that wait on a
quota once it has room again. The web pages and the `auto quota|price` CLI call these."""

from __future__ import annotations

import logging
from dataclasses import replace
from decimal import Decimal

from django.db import IntegrityError, transaction

from audit.context import system_action
from audit.services import audit_record
from budgets.quota import WINDOWS, reservation_micros, to_micros
from runs.models import Run, RunEvent, RunState
from runs.services import RunRefused, run_continue
from spend.models import ModelPrice, Quota, Scope
from spend.prices import forget_prices, micros_per_token
from spend.quotas import current

log = logging.getLogger(__name__)
QUOTA_PAUSE = "quota:"  # every quota pause reason starts so: `quota: installation`, …


class QuotaError(ValueError):
    """A quota or price that cannot be set, with what is expected."""


def quota_set(
    *,
    scope: str,
    window: str,
    tokens: int | None,
    dollars: Decimal | None,
    target: str = "",
    user=None,
    actor=None,
) -> Quota:
    """Create or change the quota of `scope` (and its recipe target or user) over `window`.
    Runs paused on a quota are woken at once if it now has room."""
    if scope not in Scope.values:
        raise QuotaError(f"scope {scope!r}: expected one of {', '.join(Scope.values)}")
    if window not in WINDOWS:
        raise QuotaError(f"window {window!r}: expected one of {', '.join(WINDOWS)}")
    if tokens is None and dollars is None:
        raise QuotaError("a quota needs tokens, dollars or both")
    if (tokens is not None and tokens <= 0) or (dollars is not None and dollars <= 0):
        raise QuotaError("a quota's tokens and dollars must be more than 0 (remove the quota to lift it)")
    if scope == Scope.RECIPE and not target:
        raise QuotaError("a recipe quota names its recipe as kind/name, e.g. web/publish-story")
    if scope == Scope.USER and user is None:
        raise QuotaError("a user quota names its user")
    who = {"target": target if scope == Scope.RECIPE else "", "user": user if scope == Scope.USER else None}
    limits = {"tokens": tokens, "micros": to_micros(dollars)}
    try:
        with transaction.atomic():
            quota, created = Quota.objects.update_or_create(scope=scope, window=window, **who, defaults=limits)
            if created:
                Quota.objects.filter(pk=quota.pk).update(created_by=actor if _person(actor) else None)
            audit_record(
                actor=actor,
                action="quota.set",
                target=("quota", quota.pk, quota.name),
                detail={"tokens": tokens, "dollars": str(dollars) if dollars is not None else None},
            )
    except IntegrityError:
        raise QuotaError(f"{scope} quota over {window} was set by someone else meanwhile; look again") from None
    transaction.on_commit(quota_wake)
    return quota


def quota_remove(*, quota: Quota, actor=None) -> str:
    name = quota.name
    with transaction.atomic():
        audit_record(actor=actor, action="quota.remove", target=("quota", quota.pk, name))
        quota.delete()  # its holds go with it: calls in flight settle against the quotas left
    transaction.on_commit(quota_wake)
    return f"{name} removed"


def price_set(
    *,
    model: str,
    input: Decimal,
    output: Decimal,
    cache_read: Decimal,
    cache_write: Decimal,
    cache_write_1h: Decimal | None = None,
    actor=None,
) -> ModelPrice:
    """An admin's price for `model` (a model id or a family prefix), USD per million tokens;
    `cache_write` is the 5-minute write, `cache_write_1h` the 1-hour one (None: 2 × input)."""
    model = model.strip()
    if not model or any(c.isspace() for c in model):
        raise QuotaError(f"model {model!r}: expected a model id such as claude-sonnet-5 (no spaces)")
    rates = {"input": input, "output": output, "cache_read": cache_read, "cache_write": cache_write}
    for name, rate in rates.items():
        if rate is None or rate < 0:
            raise QuotaError(f"{name.replace('_', ' ')} price: expected 0 or more USD per million tokens")
    if cache_write_1h is not None and cache_write_1h < 0:
        raise QuotaError("1-hour cache write price: expected 0 or more USD per million tokens (or none: 2 × input)")
    rates["cache_write_1h"] = cache_write_1h
    with transaction.atomic():
        row, _ = ModelPrice.objects.update_or_create(
            model=model, defaults={**rates, "updated_by": actor if _person(actor) else None}
        )
        audit_record(
            actor=actor,
            action="price.set",
            target=("price", row.pk, model),
            detail={k: str(v) for k, v in rates.items() if v is not None},
        )
    transaction.on_commit(forget_prices)
    transaction.on_commit(quota_wake)  # a run paused for want of a price may go on now
    return row


def price_remove(*, model: str, actor=None) -> str:
    row = ModelPrice.objects.filter(model=model).first()
    if row is None:
        raise QuotaError(f"no admin price for {model!r} (the built-in table cannot be removed)")
    with transaction.atomic():
        audit_record(actor=actor, action="price.remove", target=("price", row.pk, model))
        row.delete()
    transaction.on_commit(forget_prices)
    return f"price of {model} removed; the built-in table applies"


def quota_wake(*, now=None) -> list[str]:
    """Continue the runs paused on a quota whose waiting call now fits every quota that applies
    (the window rolled over, a quota was raised or removed, a price was set, or other calls
    settled below what they had reserved) — oldest first, and only as many as fit together,
    so that a little room wakes one run, not all of them to pause again. Called after settles
    that released a hold, by quota and price changes, and every minute by the sweeper."""
    waiting = list(Run.objects.filter(state=RunState.PAUSED, pause_reason__startswith=QUOTA_PAUSE).order_by("pk"))
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


def applies(quota: Quota, *, target: str, user_id: int | None) -> bool:
    """Whether `quota` counts a run of `target` started by `user_id` (as quotas_for selects)."""
    if quota.scope == Scope.RECIPE:
        return quota.target == target
    if quota.scope == Scope.USER:
        return user_id is not None and quota.user_id == user_id
    return True


def _fits_after(quota: Quota, promised: tuple[int, int], tokens: int, micros: int | None) -> bool:
    held = quota.standing
    return replace(
        held, reserved_tokens=held.reserved_tokens + promised[0], reserved_micros=held.reserved_micros + promised[1]
    ).fits(tokens, micros)


def _waiting_needs(runs: list[Run]) -> dict[int, tuple[int, str]]:
    """What the call each run waits for needs (tokens, model): saved with its `paused` event."""
    needs: dict[int, tuple[int, str]] = {}
    events = RunEvent.objects.filter(run__in=runs, kind="paused").order_by("run_id", "-id")
    for run_id, data in events.values_list("run_id", "data"):
        if run_id not in needs:
            needs[run_id] = (int(data.get("need_tokens") or 0), data.get("model") or "")
    return needs


def _person(user) -> bool:
    return bool(getattr(user, "is_authenticated", False))
