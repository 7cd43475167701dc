"""Starting, grading and re-grading suites (docs/evals.md). Keyword-only `<entity>_<action>`."""

from __future__ import annotations

from dataclasses import dataclass, field

from evals.format import Case
from evals.models import Suite


class SuiteRefused(Exception):
    """A suite that cannot start (broken input, a quota it would not fit, no such recipe); the
    message says where and what, with the numbers. Nothing was spent."""


@dataclass
class PlannedCase:
    case: Case
    worst_tokens: int  # the case run's worst case, plus its rubric call's bound when judge.md is set


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


def suite_plan(
    *, target: str | None = None, path: str | None = None, side: str = "main", change=None, case: str | None = None
) -> SuitePlan:
    """The plan of a suite of `target` (kind/name in the catalogue) on `side` ("main": the tracked
    branch; "change": `change`'s review branch), or of the folder `path` (rysh's layout). `case`:
    only that case. Raises SuiteRefused."""
    raise NotImplementedError


def suite_start(
    *,
    user,
    target: str | None = None,
    path: str | None = None,
    side: str = "main",
    change=None,
    case: str | None = None,
    provider: str | None = None,
) -> Suite:
    """Check the plan against the quotas (the whole ceiling must fit what they leave), record it
    in the audit log, and queue every case's run. Raises SuiteRefused before anything is spent."""
    raise NotImplementedError


def change_suites_start(*, change, user, provider: str | None = None) -> tuple[Suite, Suite]:
    """The Evals panel's button: the cases on main and on the change, side by side."""
    raise NotImplementedError


def suite_regrade(*, suite: Suite, user=None) -> Suite:
    """`--result`: the recorded runs of `suite` checked again against the current expect.yaml
    (free) and judge.md (judge calls only, under their own bound)."""
    raise NotImplementedError


def suite_exit_code(suite: Suite) -> int:
    """rysh's: 0 all passed, 1 a case failed, 3 the suite's ceiling ended it (2 is a refusal)."""
    raise NotImplementedError
