"""A sub-agent's budget carved out of its parent's (docs/agent-tools.md). Pure.

An agent spends from a `Purse`: what its leg (the run's agent) or its allotment (a sub-agent)
has left. A sub_agent call carves the asked budget out of the caller's purse *before* the
sub-agent starts, keeping back what the caller's own next answer needs (`answer_margin`);
the sub-agent's every call is clamped to its own purse (budgets.guard), and what it leaves
unspent goes back when it ends. So whatever an agent delegates, it and all its sub-agents
together never spend more than its purse held: the parent's ceiling holds. (rysh bounds each
sub-agent by its own budget, independently of the parent's.)
"""

from __future__ import annotations

from dataclasses import dataclass

from budgets.guard import MESSAGE_OVERHEAD, MIN_USEFUL_OUTPUT, REQUEST_OVERHEAD

# a sub-agent's first call carries at least the request's overhead and a useful answer: a
# budget below this could not buy one call, and is refused rather than started to fail
MIN_SUB_BUDGET = REQUEST_OVERHEAD + 2 * MIN_USEFUL_OUTPUT + 1024
# the most characters of a sub-agent's final answer that come back to its caller
ANSWER_CHARS = 4000


class CarveRefused(Exception):
    """The asked budget does not fit: the message names the numbers (a tool error)."""


def answer_margin(*, context: int, output: int, answers: int) -> int:
    """What the caller's next call needs, kept back from what it may give: that call's input
    (its last call's whole context and reply, as the API reported them, plus up to `answers`
    sub-agents' answers, at most ANSWER_CHARS bytes each, and their framing) and the smallest
    useful answer."""
    return context + output + answers * (ANSWER_CHARS + MESSAGE_OVERHEAD + 64) + MIN_USEFUL_OUTPUT


@dataclass
class Purse:
    """Tokens an agent may still spend. `holder` names it in a refusal ("this leg", "sub-1")."""

    left: int
    holder: str = "this leg"

    def spend(self, tokens: int) -> None:
        """A settled call's counted tokens (never more than `left`: the call was clamped to it)."""
        if tokens > self.left:
            raise AssertionError(f"{self.holder} spent {tokens:,} tokens with {self.left:,} left")
        self.left -= tokens

    def room(self, margin: int) -> int:
        """What this agent can give a sub-agent, its next answer's `margin` kept back."""
        return max(0, self.left - margin)

    def carve(self, asked: int | None, *, margin: int, holder: str) -> Purse:
        """The sub-agent's purse, taken from this one now; `asked` None: half of the room.
        CarveRefused (with the numbers) when it asks more than the room or too little to call."""
        room = self.room(margin)
        budget = room // 2 if asked is None else asked
        kept = f"{self.left:,} less {margin:,} kept for your next answer"
        if asked is not None and asked > room:
            raise CarveRefused(f"sub_agent asked {asked:,} tokens; {self.holder} has {room:,} left ({kept})")
        if budget < MIN_SUB_BUDGET:
            said = f"asked {asked:,}" if asked is not None else f"would get half of {room:,}"
            raise CarveRefused(
                f"sub_agent {said} tokens; a sub-agent needs at least {MIN_SUB_BUDGET:,} "
                f"({self.holder} has {room:,} left: {kept})"
            )
        self.left -= budget
        return Purse(budget, holder)

    def give_back(self, child: Purse) -> None:
        """The sub-agent ended: what it did not spend is this agent's again."""
        self.left += child.left
        child.left = 0
