"""What the Evals panel and the recipe page show of suites, computed from plain rows (pure: no
Django, no database): two sides side by side, a case's history, its pass rate over time, and
whether it is flaky (docs/evals.md, "In review" and "History and flaky cases")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

# a CaseResult's state as the pages say it: pending and grading are both "running"
OUTCOMES = {
    "pending": "running",
    "grading": "running",
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "broken": "broken",
}
DONE = ("passed", "failed", "error", "broken")


@dataclass(frozen=True)
class Cell:
    """One case's result in one suite."""

    name: str
    outcome: str  # passed | failed | error | broken | running
    tokens: int = 0
    cost: Decimal | None = None
    failures: tuple[str, ...] = ()  # what broke it: "assertion: message", or the cause
    digest: str = ""
    suite_id: int = 0
    side: str = ""
    commit_sha: str = ""
    when: datetime | None = None
    run_id: int | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass(frozen=True)
class SideTotals:
    cases: int
    passed: int
    running: int
    tokens: int
    cost: Decimal | None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.cases if self.cases else None

    @property
    def done(self) -> bool:
        return self.running == 0


@dataclass(frozen=True)
class Row:
    name: str
    main: Cell | None
    change: Cell | None

    @property
    def what_failed(self) -> list[tuple[str, str]]:
        """(side, message) for every failure on either side, the change's first."""
        return [
            (side, m) for side, cell in (("change", self.change), ("main", self.main)) if cell for m in cell.failures
        ]

    @property
    def flipped(self) -> bool:
        """Passed on one side and not on the other (both graded)."""
        if not (self.main and self.change) or "running" in (self.main.outcome, self.change.outcome):
            return False
        return self.main.passed != self.change.passed


@dataclass(frozen=True)
class Comparison:
    rows: list[Row]
    main: SideTotals | None
    change: SideTotals | None

    @property
    def pass_rate_delta(self) -> float | None:
        if not (self.main and self.change) or self.main.pass_rate is None or self.change.pass_rate is None:
            return None
        return self.change.pass_rate - self.main.pass_rate

    @property
    def cost_delta(self) -> Decimal | None:
        if not (self.main and self.change) or self.main.cost is None or self.change.cost is None:
            return None
        return self.change.cost - self.main.cost

    @property
    def tokens_delta(self) -> int | None:
        return self.change.tokens - self.main.tokens if self.main and self.change else None

    @property
    def running(self) -> bool:
        return any(side is not None and not side.done for side in (self.main, self.change))


def side_totals(cells: Sequence[Cell], *, tokens: int | None = None, cost: Decimal | None = None) -> SideTotals:
    """`tokens`/`cost`: the suite's own totals when it has them (its rubric calls count too);
    else the cases' sums (the cost unknown when no case has one)."""
    costs = [c.cost for c in cells if c.cost is not None]
    return SideTotals(
        cases=len(cells),
        passed=sum(c.passed for c in cells),
        running=sum(c.outcome == "running" for c in cells),
        tokens=tokens if tokens is not None else sum(c.tokens for c in cells),
        cost=cost if cost is not None else (sum(costs, Decimal(0)) if costs else None),
    )


def compare(
    main: Sequence[Cell] | None,
    change: Sequence[Cell] | None,
    *,
    main_totals: SideTotals | None = None,
    change_totals: SideTotals | None = None,
) -> Comparison:
    """A row per case name on either side (sorted), with each side's totals (None: no suite)."""
    by_main = {c.name: c for c in main or ()}
    by_change = {c.name: c for c in change or ()}
    rows = [Row(name, by_main.get(name), by_change.get(name)) for name in sorted(by_main.keys() | by_change.keys())]
    return Comparison(
        rows,
        main_totals or (side_totals(main) if main is not None else None),
        change_totals or (side_totals(change) if change is not None else None),
    )


# --- history --------------------------------------------------------------------------------------


def is_flaky(cells: Iterable[Cell]) -> bool:
    """The case passed and failed on the same version (same digest: the recipe text and the case's
    files): nothing it depends on changed, yet its result flipped."""
    seen: dict[str, set[bool]] = {}
    for cell in cells:
        if cell.outcome in ("passed", "failed") and cell.digest:
            seen.setdefault(cell.digest, set()).add(cell.passed)
    return any(len(results) == 2 for results in seen.values())


def rolling_pass_rate(cells: Sequence[Cell], *, window: int = 5) -> list[float]:
    """Oldest first: after each graded result, the share of the last `window` graded ones that passed."""
    graded = [c.passed for c in cells if c.outcome in DONE]
    return [sum(graded[max(0, i + 1 - window) : i + 1]) / min(i + 1, window) for i in range(len(graded))]


@dataclass
class CaseHistory:
    name: str
    recent: list[Cell] = field(default_factory=list)  # newest first
    rates: list[float] = field(default_factory=list)  # oldest first, for the chart
    flaky: bool = False

    @property
    def pass_rate(self) -> float | None:
        graded = [c for c in self.recent if c.outcome in DONE]
        return sum(c.passed for c in graded) / len(graded) if graded else None


def case_histories(cells: Iterable[Cell], *, recent: int = 10) -> dict[str, CaseHistory]:
    """Per case name: its newest `recent` results, its pass rate over time and whether it is
    flaky. `cells` in any order; ordered by suite (oldest first) here."""
    ordered = sorted(cells, key=_chronological)
    by_name: dict[str, list[Cell]] = {}
    for cell in ordered:
        by_name.setdefault(cell.name, []).append(cell)
    return {
        name: CaseHistory(name, list(reversed(mine))[:recent], rolling_pass_rate(mine), is_flaky(mine))
        for name, mine in sorted(by_name.items())
    }


def _chronological(cell: Cell) -> tuple[float, int]:
    return (cell.when.timestamp() if cell.when else float("-inf"), cell.suite_id)


def suite_rates(cells: Iterable[Cell]) -> list[tuple[int, float]]:
    """(suite id, pass rate) per suite with every case graded, oldest first."""
    suites: dict[int, list[Cell]] = {}
    order: dict[int, tuple] = {}
    for cell in cells:
        suites.setdefault(cell.suite_id, []).append(cell)
        order[cell.suite_id] = _chronological(cell)
    return [
        (sid, sum(c.passed for c in mine) / len(mine))
        for sid, mine in sorted(suites.items(), key=lambda item: order[item[0]])
        if all(c.outcome in DONE for c in mine)
    ]


def chart_points(values: Sequence[float], *, width: int = 120, height: int = 24, pad: int = 2) -> str:
    """An SVG polyline's points for values in [0, 1], left to right, 1 at the top."""
    if not values:
        return ""
    inner_w, inner_h = width - 2 * pad, height - 2 * pad
    step = inner_w / (len(values) - 1) if len(values) > 1 else 0
    points = []
    for i, value in enumerate(values):
        x = pad + (i * step if len(values) > 1 else inner_w / 2)
        y = pad + (1 - min(max(value, 0.0), 1.0)) * inner_h
        points.append(f"{x:.1f},{y:.1f}")
    return " ".join(points)
