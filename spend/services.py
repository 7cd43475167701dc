"""Writes of spend governance: quotas and prices (admins). The web pages and the
`auto quota|price` CLI call these. A change that may give room sends quota_released after its
commit; runs (above spend) wakes the runs that wait on a quota (runs/quota_waits.py)."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction

from audit.services import audit_record
from budgets.quota import WINDOWS, to_micros
from spend.models import ModelPrice, Quota, Scope
from spend.prices import forget_prices
from spend.signals import quota_released

log = logging.getLogger(__name__)


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
    transaction.on_commit(_room_may_have_come)
    return quota


def quota_remove(*, quota: Quota, actor=None) -> str:
    name = quota.name
    with transaction.atomic():
        audit_record(actor=actor, action="quota.remove", target=("quota", quota.pk, name))
        quota.delete()  # its holds go with it: calls in flight settle against the quotas left
    transaction.on_commit(_room_may_have_come)
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
    transaction.on_commit(_room_may_have_come)  # a run paused for want of a price may go on now
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


def _room_may_have_come() -> None:
    """Runs paused on a quota may fit now: runs (above spend) listens and wakes them."""
    quota_released.send(sender=Quota)


def _person(user) -> bool:
    return bool(getattr(user, "is_authenticated", False))
