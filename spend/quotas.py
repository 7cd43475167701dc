"""Quotas enforced by the reservation (docs/spend.md): take, settle, roll over.

Before every model call the ledger takes the call's reservation (input bound + max_tokens,
and in micro-dollars the most those tokens can cost) from every quota that applies to the
run, in the transaction that writes the call's pending step: one conditional UPDATE per quota
row — `reserved += r WHERE used + reserved + r <= limit AND window_start = current` — so two
workers (or machines) can never both pass the limit, and a refused call leaves no trace.
After the call the same transaction that settles the step moves its holds from `reserved` to
`used` at the real usage (at the full reservation when the call's worker died or the call was
interrupted: counted, never less, never twice — deleting the hold is the claim).

A window rolls over when a take finds the row's window_start older than now's: under the
row's lock the new window's figures are counted from the ledger (spend already settled in
it) and the live holds, so a quota set at 3 pm counts the morning's spend too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from budgets.quota import reservation_micros, to_micros, window_start
from spend.models import Quota, QuotaHold, Scope
from spend.prices import micros_per_token, price_of
from spend.signals import quota_released

QUOTA_PAUSE = "quota:"  # every quota pause reason starts so: `quota: installation`, …


class QuotaRefused(Exception):
    """A call does not fit a quota: the run waits (paused) until it does."""

    def __init__(self, quota: Quota, *, tokens: int, micros: int | None, at_least: bool = False):
        self.quota, self.tokens, self.micros = quota, tokens, micros
        super().__init__(refusal_text(quota, tokens=tokens, micros=micros, at_least=at_least))


def refusal_text(quota: Quota, *, tokens: int, micros: int | None, at_least: bool = False) -> str:
    if quota.micros is not None and micros is None:
        return f"{quota.name} is in dollars and this call's model has no price: set its price on the Prices page"
    left = quota.standing
    said = []
    if quota.tokens is not None:
        said.append(f"{left.tokens_left:,} tokens left")
    if quota.micros is not None:
        said.append(f"${Decimal(left.micros_left) / 1_000_000:,.4f} left")
    need = f"{tokens:,} tokens" + (f" (${Decimal(micros) / 1_000_000:,.4f})" if micros and quota.micros else "")
    return f"{quota.name} has {' and '.join(said)}; this call needs {'at least' if at_least else 'up to'} {need}"


def quotas_for(*, target: str, user_id: int | None) -> list[Quota]:
    """The quotas that apply to a run of `target` charged to `user_id` (who started it, or who
    last continued or granted it: Run.charged_to), in lock order."""
    which = Q(scope=Scope.INSTALLATION) | Q(scope=Scope.RECIPE, target=target)
    if user_id is not None:
        which |= Q(scope=Scope.USER, user_id=user_id)
    return list(Quota.objects.filter(which).select_related("user").order_by("pk"))


def applies(quota: Quota, *, target: str, user_id: int | None) -> bool:
    """Whether `quota` counts a run of `target` started by `user_id` (as quotas_for selects)."""
    if quota.scope == Scope.RECIPE:
        return quota.target == target
    if quota.scope == Scope.USER:
        return user_id is not None and quota.user_id == user_id
    return True


@dataclass(frozen=True)
class Room:
    """What the quotas that apply to a run leave its next call on `model`."""

    quotas: list[Quota]  # as read now, in lock order (ledger.reserve takes from these)
    tokens: int | None  # the most one call may reserve (None: no quota limits it)
    tightest: Quota | None  # the quota that leaves the least


def room_for(*, target: str, user_id: int | None, model: str, now=None) -> Room:
    quotas = [current(q, now) for q in quotas_for(target=target, user_id=user_id)]
    rooms = [(room, q) for q in quotas if (room := _room(q, model)) is not None]
    if not rooms:
        return Room(quotas, None, None)
    tokens, tightest = min(rooms, key=lambda pair: pair[0])
    return Room(quotas, tokens, tightest)


def _room(quota: Quota, model: str) -> int | None:
    """The most one call on `model` may reserve here: at its dearest rate, or — a tiered model
    (Haiku 5.5) — at its cheaper tier's for a bound that stays within that tier."""
    room = quota.standing.room(micros_per_token(model))
    tier = price_of(model) if quota.micros is not None else None
    if room is None or tier is None or tier.tier_tokens is None:
        return room
    cheaper = quota.standing.room(micros_per_token(model, tier.tier_tokens))
    return max(room, min(cheaper, tier.tier_tokens))


def current(quota: Quota, now=None) -> Quota:
    """The quota with its figures for the window `now` falls in (rolled over if it had not)."""
    start = window_start(quota.window, now or timezone.now(), settings.TIME_ZONE)
    if quota.window_start == start:
        return quota
    with transaction.atomic():
        # The lock first (PostgreSQL: this row; SQLite: IMMEDIATE transactions hold the write
        # lock): a settle of this quota waits for the recount or is already in what it reads.
        locked = Quota.objects.select_for_update(of=("self",)).select_related("user").get(pk=quota.pk)
        if locked.window_start != start:
            tokens, micros = spent_since(locked, start)
            held = locked.holds.aggregate(tokens=Sum("tokens"), micros=Sum("micros"))
            locked.window_start, locked.used_tokens, locked.used_micros = start, tokens, micros
            locked.reserved_tokens, locked.reserved_micros = held["tokens"] or 0, held["micros"] or 0
            Quota.objects.filter(pk=locked.pk).update(
                window_start=start,
                used_tokens=tokens,
                used_micros=micros,
                reserved_tokens=locked.reserved_tokens,
                reserved_micros=locked.reserved_micros,
            )
    return locked


# The ledger (one entry per call) is runs': runs writes it and sits above spend. What a window's
# recount needs of it comes through this port, which runs fills in when it is ready
# (runs/apps.py: spend.quotas.read_ledger_with(runs.ledger.spent_rows)).
SpentRows = Callable[["Quota", datetime], Iterable[dict]]  # rows of model, estimated, tokens, cost
_ledger: SpentRows | None = None


def read_ledger_with(reader: SpentRows) -> None:
    global _ledger
    _ledger = reader


def spent_since(quota: Quota, start) -> tuple[int, int]:
    """Counted tokens and micro-dollars the ledger settled in `quota`'s scope since `start`.
    A call counted at its reservation (its worker died) is priced at the dearest rate."""
    if _ledger is None:
        raise ImproperlyConfigured("spend.quotas has no ledger to read: the runs app gives it one when it is ready")
    tokens, micros = 0, 0
    for row in _ledger(quota, start):
        tokens += row["tokens"] or 0
        if row["estimated"]:
            tokens_ = row["tokens"] or 0  # their sum bounds each call: its tier is never too cheap
            micros += reservation_micros(tokens_, micros_per_token(row["model"], tokens_)) or 0
        else:
            micros += to_micros(row["cost"]) or 0
    return tokens, micros


def _fits(quota: Quota, tokens: int, micros: int | None) -> Q:
    """The row, still in the window read, with room for `tokens` and `micros` beside what is
    used and held: the condition of the UPDATE that takes them (two takers cannot both fit)."""
    fits = Q(pk=quota.pk, window_start=quota.window_start)
    if quota.tokens is not None:
        fits &= Q(tokens__gte=F("used_tokens") + F("reserved_tokens") + tokens)
    if quota.micros is not None:
        fits &= Q(micros__gte=F("used_micros") + F("reserved_micros") + micros)
    return fits


def take(step, quotas: list[Quota], *, model: str, tokens: int, now=None) -> None:
    """Inside the step's transaction: reserve `tokens` (and their most cost) from every quota
    that applies (quotas_for), or raise QuotaRefused (the caller's transaction then leaves
    no trace)."""
    step.held_quotas = []  # what settle() needs to know without asking the database
    if not quotas:
        return
    micros = reservation_micros(tokens, micros_per_token(model, tokens))
    for quota in quotas:
        quota = current(quota, now)
        if quota.micros is not None and micros is None:
            raise QuotaRefused(quota, tokens=tokens, micros=None)
        claimed = Quota.objects.filter(_fits(quota, tokens, micros)).update(
            reserved_tokens=F("reserved_tokens") + tokens, reserved_micros=F("reserved_micros") + (micros or 0)
        )
        if claimed != 1:  # full, or its window rolled over meanwhile: the caller reads it again
            quota.refresh_from_db()
            raise QuotaRefused(quota, tokens=tokens, micros=micros)
        QuotaHold.objects.create(step=step, quota=quota, tokens=tokens, micros=micros or 0)
        step.held_quotas.append(quota.pk)


@dataclass(frozen=True)
class DirectHold:
    """A reservation taken without a step (a re-judge's call): kept in memory, not as a
    QuotaHold row, so a worker that dies mid-call leaves it counted as used (never less)."""

    quota_id: int
    window_start: object
    tokens: int
    micros: int


def take_direct(quotas: list[Quota], *, model: str, tokens: int, now=None) -> list[DirectHold]:
    """Reserve `tokens` from every quota that applies by the same conditional UPDATE as take(),
    counted at once as used; settle_direct() corrects it to the real usage. QuotaRefused when
    one has no room (the ones already taken are given back)."""
    taken: list[DirectHold] = []
    micros = reservation_micros(tokens, micros_per_token(model, tokens))
    try:
        for quota in quotas:
            quota = current(quota, now)
            if quota.micros is not None and micros is None:
                raise QuotaRefused(quota, tokens=tokens, micros=None)
            if (
                Quota.objects.filter(_fits(quota, tokens, micros)).update(
                    used_tokens=F("used_tokens") + tokens, used_micros=F("used_micros") + (micros or 0)
                )
                != 1
            ):
                quota.refresh_from_db()
                raise QuotaRefused(quota, tokens=tokens, micros=micros)
            taken.append(DirectHold(quota.pk, quota.window_start, tokens, micros or 0))
    except QuotaRefused:
        settle_direct(taken, tokens=0, cost=None)
        raise
    return taken


def settle_direct(held: list[DirectHold], *, tokens: int, cost: Decimal | None) -> None:
    """The real usage in place of the reservation, in the window it was taken in (a window
    that rolled over meanwhile recounted from the ledger)."""
    for hold in held:
        Quota.objects.filter(pk=hold.quota_id, window_start=hold.window_start).update(
            used_tokens=F("used_tokens") + tokens - hold.tokens,
            used_micros=F("used_micros") + (to_micros(cost) or 0) - hold.micros,
        )


def settle(step, *, tokens: int | None = None, cost: Decimal | None = None) -> bool:
    """Inside the settle's transaction: the step's holds become used — at `tokens` and `cost`
    (the call's real usage), or at the reservation itself when they are None (the call was
    interrupted or its worker died). True when the step held anything (someone may wait)."""
    held = False
    if getattr(step, "held_quotas", None) == []:
        return held  # taken in this process with no quota to hold: nothing to ask the database
    for hold in QuotaHold.objects.filter(step=step).order_by("quota_id"):
        if QuotaHold.objects.filter(pk=hold.pk).delete()[0] != 1:
            continue  # settled by someone else meanwhile
        used_tokens = hold.tokens if tokens is None else tokens
        used_micros = hold.micros if tokens is None else (to_micros(cost) or 0)
        Quota.objects.filter(pk=hold.quota_id).update(
            reserved_tokens=F("reserved_tokens") - hold.tokens,
            reserved_micros=F("reserved_micros") - hold.micros,
            used_tokens=F("used_tokens") + used_tokens,
            used_micros=F("used_micros") + used_micros,
        )
        held = True
    if held:
        transaction.on_commit(_released)
    return held


def _released() -> None:
    quota_released.send(sender=Quota)
