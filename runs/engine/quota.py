"""A model call against the team's spend quotas (spend.quotas): its max_tokens fitted to the
room they leave, and the wait (a pause the quota wakes) when there is none."""

from __future__ import annotations

from collections.abc import Callable

from agents.ports import ModelReply
from budgets.guard import MIN_USEFUL_OUTPUT, clamp_max_tokens
from budgets.quota import reservation_micros
from runs.models import Run
from spend.prices import micros_per_token
from spend.quotas import QuotaRefused, room_for

QUOTA_TRIES = 2  # a refused reservation is tried once more (a window may have just rolled over)
QUOTA_CUT = (
    "[Your reply was cut off here: the team's spend quota had room for only this much. Go on from where it stopped.]"
)


class Quota:
    """The quotas that apply to the run's next call (task, wrap-up or judge), one call at a time."""

    def __init__(self, run: Run, pause: Callable[..., None]):
        self.run = run
        self._pause = pause  # the engine's: the run pauses, this worker lets the run go
        self._refusals = 0  # in a row, for the call about to be made
        self._cut = False  # the call about to be made has a max_tokens a quota clamped

    def fit(
        self, bound: int, max_tokens: int, model: str, recount=None, *, none_known: bool = False
    ) -> tuple[int, list, int]:
        """max_tokens clamped to what the quotas that apply leave (as the hard ceiling clamps
        it to the leg's allotment), those quotas and the input bound; where a quota is what
        clamps, `recount` may give an exact count of the input instead of its byte bound (a
        quota is then used to its end, not left with a byte bound's slack). A call with no
        useful room left waits. `none_known`: the settle just before read that no quota
        exists (runs.ledger.Ledger.no_quota_since_settle), so none is read again now."""
        self._cut = False
        if none_known:
            return max_tokens, [], bound
        room = room_for(target=self.run.target, user_id=self.run.charged_to_id, model=model)
        if room.tokens is None:
            return max_tokens, room.quotas, bound
        fitted = clamp_max_tokens(room.tokens, bound, ceiling=max_tokens)
        if recount is not None and (fitted is None or fitted < max_tokens):
            bound = recount()
            fitted = clamp_max_tokens(room.tokens, bound, ceiling=max_tokens)
        if fitted is None:
            need = bound + MIN_USEFUL_OUTPUT
            rate = micros_per_token(model)
            refused = QuotaRefused(room.tightest, tokens=need, micros=reservation_micros(need, rate), at_least=True)
            self.wait(refused, model, at_once=True)
        self._cut = fitted < max_tokens
        return fitted, room.quotas, bound

    def reserved(self) -> None:
        """The call's reservation was taken: the next refusal is a first one again."""
        self._refusals = 0

    def cut(self, reply: ModelReply) -> bool:
        """The reply stopped at a max_tokens only a quota had clamped: work cut short, not done."""
        return self._cut and reply.stop_reason == "max_tokens" and not reply.tool_calls

    def wait(self, refused: QuotaRefused, model: str, *, at_once: bool = False) -> None:
        """A call that does not fit a quota waits: a refused reservation is tried once more,
        then the run pauses as `paused(quota: <scope>)` with what the call needs, and
        runs.quota_waits.quota_wake continues it once that fits (window rolled over, quota
        raised, calls settled)."""
        self._refusals += 1
        if self._refusals < QUOTA_TRIES and not at_once:
            return
        self._refusals = 0
        self._pause(
            refused.quota.pause_reason, str(refused), need_tokens=refused.tokens, model=model, quota=refused.quota.pk
        )
