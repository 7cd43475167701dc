"""THE budgeted model call (docs/running-loops.md, hard ceiling; docs/spend.md, quotas). Every model
call that spends a budget goes through `budgeted_call`: a task or wrap-up step, the judge, a
re-judge's call and an eval case's rubric. It owns, in this order:

1. the bound: the call's input bounded by its bytes (the caller's `bound`), its max_tokens
   clamped so that bound + max_tokens fits what the budget has left (`left`, under `ceiling`);
2. the exact count: where the byte bound clamps (or, `eager=False`, only where it does not fit at
   all) the provider's exact count, with its margin, may give room back;
3. the quota fit and the reservation: a `Reservation` holds the call's worst case before the
   call is made (a pending Step of a run, or a direct hold on the quotas outside a run);
4. the call, timed by the metrics, cancellable through its request;
5. the settle: a cancelled call is counted at its reservation, a failed one at nothing (both
   here); a call that answered is settled by the caller through its reservation, inside the
   transaction that writes what the reply means (a step's checkpoint, a verdict, a grade).

What differs between the callers is a parameter: the budget it fits (`left`, `ceiling`), how its
input is counted (`count`), and where its tokens are held and counted (the reservation)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from agents.ports import ModelCancelled, ModelError, ModelPort, ModelReply, ModelRequest, Usage
from budgets.guard import clamp_max_tokens
from runs.engine.fitting import with_margin, worth_counting
from runs.ledger import Ledger, ledger_direct_entry
from runs.models import Pass, StepStatus
from rysh_site import metrics
from spend import quotas


@dataclass(frozen=True)
class Sized:
    bound: int  # the input's bound (an exact count with its margin where one was made)
    max_tokens: int | None  # None: too little is left for a useful answer
    counted: bool  # the exact count was asked for already


def call_size(bound: int, *, left: int, ceiling: int, count: Callable[[], int], eager: bool = True) -> Sized:
    """The largest max_tokens (up to `ceiling`) that fits `left` beside the input's bound; where
    the byte bound clamps it (`eager`) or leaves no room at all, `count()` gives the bound again."""
    max_tokens = clamp_max_tokens(left, bound, ceiling=ceiling)
    counting = worth_counting(max_tokens, ceiling) if eager else max_tokens is None
    if counting:
        bound = count()
        max_tokens = clamp_max_tokens(left, bound, ceiling=ceiling)
    return Sized(bound, max_tokens, counting)


def counted_bound(model: ModelPort, request: ModelRequest, bound: int, *, exact: bool = True) -> int:
    """The provider's exact count of `request` with its margin where it beats `bound`, else
    `bound` (a provider that cannot count, or counting turned off)."""
    counted = exact_count(model, request, exact=exact)
    return bound if counted is None else min(bound, counted)


def exact_count(model: ModelPort, request: ModelRequest, *, exact: bool = True) -> int | None:
    """The provider's exact input count, margin included, or None (the byte bound stands)."""
    count = getattr(model, "count_tokens", None)  # a port method only some providers have
    if not exact or count is None:
        return None
    counted = count(request)
    return None if counted is None else with_margin(counted)


@dataclass
class Held:
    """A reservation taken: the call's max_tokens and bound as the quotas fitted them, and what
    holds them (a pending Step, or the direct holds on the quotas)."""

    max_tokens: int
    bound: int
    hold: object


class Reservation(Protocol):
    def take(self, bound: int, max_tokens: int, recount: Callable[[], int] | None) -> Held: ...
    def cancelled(self, held: Held, seconds: float) -> None: ...
    def failed(self, held: Held, message: str, seconds: float) -> None: ...


@dataclass
class Called:
    reply: ModelReply
    held: Held
    started: float  # time.monotonic() when the call was made


def budgeted_call(
    *,
    model: ModelPort,
    request: Callable[[int, float], ModelRequest],
    label: str,
    sized: Sized,
    count: Callable[[], int],
    reservation: Reservation,
) -> Called:
    """The call `sized` allows (its max_tokens is not None), held by `reservation` first.
    `request(max_tokens, started)` builds it; a cancel settles it at its reservation and raises
    ModelCancelled, a failure settles it at nothing and raises ModelError."""
    held = reservation.take(sized.bound, sized.max_tokens, None if sized.counted else count)
    started = time.monotonic()
    made = request(held.max_tokens, started)
    try:
        with metrics.model_call(made.model, label):
            reply = model.complete(made)
    except ModelCancelled:
        reservation.cancelled(held, time.monotonic() - started)
        raise
    except ModelError as exc:
        reservation.failed(held, str(exc), time.monotonic() - started)
        raise
    return Called(reply, held, started)


# -- where a call's tokens are held and counted ----------------------------------------------------


@dataclass
class StepReservation:
    """A run's call (task, wrap-up, judge): fitted to the team's quotas (runs.engine.quota), held
    as the pending Step of its pass (runs.ledger), counted on that step when settled. A refused
    reservation either goes back to the caller (a leg sizes its step again) or, `wait_refused`,
    waits and is tried again as it was sized (the judge)."""

    ledger: Ledger
    quota: object  # runs.engine.quota.Quota
    run_pass: Pass
    leg: str
    model: str
    message_count: int
    none_known: bool = False  # no quota existed at the last settle: none is read again
    wait_refused: bool = False
    marks: dict = field(default_factory=dict)  # onto the step: a sub-agent's (runs.engine.delegation)

    def take(self, bound: int, max_tokens: int, recount: Callable[[], int] | None) -> Held:
        while True:
            fitted, applying, bound = self.quota.fit(bound, max_tokens, self.model, recount, none_known=self.none_known)
            try:
                step = self.ledger.reserve(
                    self.run_pass,
                    leg=self.leg,
                    model=self.model,
                    max_tokens=fitted,
                    bound=bound,
                    message_count=self.message_count,
                    applying=applying,
                    **self.marks,
                )
                break
            except quotas.QuotaRefused as refused:
                if not self.wait_refused:
                    raise
                self.quota.wait(refused, self.model)
        self.quota.reserved()
        return Held(fitted, bound, step)

    def cancelled(self, held: Held, seconds: float) -> None:
        self.ledger.settle_reserved(held.hold, StepStatus.CANCELLED, seconds)

    def failed(self, held: Held, message: str, seconds: float) -> None:
        self.ledger.settle_failed(held.hold, message, seconds)

    def settle(self, held: Held, usage: Usage, *, clock_seconds: float) -> None:
        """Inside the caller's transaction: the step at its real usage."""
        self.ledger.settle(held.hold, usage, clock_seconds=clock_seconds)


@dataclass
class DirectReservation:
    """A call outside a run's steps (a re-judge's, an eval case's rubric): its worst case held
    directly on the quotas that apply (QuotaRefused goes back to the caller), counted by a direct
    ledger entry when settled."""

    model: str
    target: str
    user_id: int | None

    def take(self, bound: int, max_tokens: int, recount: Callable[[], int] | None) -> Held:
        applying = quotas.quotas_for(target=self.target, user_id=self.user_id)
        return Held(max_tokens, bound, quotas.take_direct(applying, model=self.model, tokens=bound + max_tokens))

    def cancelled(self, held: Held, seconds: float) -> None:
        quotas.settle_direct(held.hold, tokens=0, cost=None)

    def failed(self, held: Held, message: str, seconds: float) -> None:
        quotas.settle_direct(held.hold, tokens=0, cost=None)

    def settle(self, held: Held, usage: Usage, *, purpose: str, **where):
        """Inside the caller's transaction: the ledger entry at the real usage; its money."""
        return ledger_direct_entry(
            usage=usage, model=self.model, purpose=purpose, held=held.hold, charged_to_id=self.user_id, **where
        )
