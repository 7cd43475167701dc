"""Forks (docs/forks.md): a new run of a run's recipe version that starts from the state at the end
of one of its passes — its results folder, its working copy (a new copy made from that pass's
restorable point, on its own branch), the verdict and `iterate_with` that pass produced — and goes
on with the next pass, with the person's edits (prompt, `iterate_with`, `until`, model, effort,
budget). "Redo pass N" starts from the end of pass N-1. Earlier passes are not paid again."""

from __future__ import annotations

from dataclasses import dataclass, field

from runs.models import Run
from runs.services import RunRefused


class ForkRefused(RunRefused):
    """A fork that cannot start; the message says why (and, for a form, `field` which input)."""

    def __init__(self, message: str, *, field: str = ""):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class ForkEdits:
    """What the person changed; None: as the parent's recipe version has it."""

    prompt: str | None = None
    iterate_with: str | None = None
    until: str | None = None
    model: str | None = None
    effort: str | None = None
    budget: str | None = None  # a size in the recipe's units ("2 books"), the whole loop's budget

    def edited(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class ForkPlan:
    """Shown before a fork starts: where it starts, the worst case of the fork, what the parent
    spent up to that point (not paid again), the recipe text the fork runs, and notes (the recipe's
    file changed since: the parent's version is used)."""

    parent: Run
    from_pass: int  # the parent's pass whose end state the fork starts from (0: the start)
    redo: bool
    recipe_text: str
    worst_tokens: int = 0
    parent_spent_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def fork_points(run: Run) -> dict[int, str]:
    """pass number -> "" when it can be forked from, else why not (no point kept, removed by
    retention, a web run's live browser state not restorable — said, but its results fork)."""
    raise NotImplementedError


def fork_plan(*, run: Run, pass_number: int, redo: bool = False, edits: ForkEdits | None = None) -> ForkPlan:
    """Raises ForkRefused (with `field`) before anything is spent."""
    raise NotImplementedError


def run_fork(
    *,
    run: Run,
    pass_number: int,
    user,
    redo: bool = False,
    edits: ForkEdits | None = None,
    provider: str | None = None,
) -> Run:
    """Start the fork (quotas, notifications, audit `run.fork` apply: it is a run). Raises ForkRefused."""
    raise NotImplementedError
