"""The shapes of a suite's plan, shared by the services and the pages (docs/evals.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from evals.format import Case


class SuiteRefused(Exception):
    """A suite that cannot start (broken input, a quota it would not fit, no such recipe); the
    message says where and what, with the numbers. Nothing was spent."""


@dataclass
class PlannedCase:
    case: Case
    worst_tokens: int  # the case run's worst case, plus its rubric call's bound when judge.md is set
    run_tokens: int = 0  # the run's worst case alone
    rubric_tokens: int = 0  # the rubric call's bound (input bound + its most output); 0 without judge.md
    money: Decimal | None = None  # the worst case priced at the dearest rates (None: a model has no price)


@dataclass
class SuitePlan:
    """What a suite would run, shown before it starts: every case with its worst case, the
    broken ones with their errors, the ceiling (the worst cases summed) and its money."""

    target: str
    side: str
    commit_sha: str
    recipe_text: str
    cases: list[PlannedCase] = field(default_factory=list)
    broken: list[Case] = field(default_factory=list)
    budget_tokens: int = 0
    lines: list[str] = field(default_factory=list)
    money: Decimal | None = None  # the ceiling's money (None: a model has no price)
    read: object = field(default=None, repr=False, compare=False)  # what was read (evals.planning.Read)
