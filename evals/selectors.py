"""Reads of suites for the pages, the API and the merge gate (docs/evals.md)."""

from __future__ import annotations

from django.conf import settings

from catalogue.repo import RepoError
from evals.compare import CaseHistory, Cell, Comparison, case_histories, compare, side_totals, suite_rates
from evals.models import CaseResult, CaseState, Suite, SuiteSide, SuiteState
from evals.planning import change_recipe_path
from reviews.models import ChangeAction
from reviews.services import change_request_repo

HISTORY_SUITES = 30  # the recipe page reads this many of its newest suites


def suites_for_change(change) -> dict[str, Suite | None]:
    """The newest suite of each side ("main", "change") for a change request."""
    found: dict[str, Suite | None] = {SuiteSide.MAIN: None, SuiteSide.CHANGE: None}
    for side in found:
        found[side] = Suite.objects.filter(change_request=change, side=side).order_by("-created_at", "-id").first()
    return {str(side): suite for side, suite in found.items()}


def cell_of(result: CaseResult, suite: Suite | None = None) -> Cell:
    suite = suite or result.suite
    return Cell(
        name=result.name,
        outcome=_outcome(result, suite),
        tokens=result.tokens,
        cost=result.cost,
        failures=_failures(result),
        digest=result.digest,
        suite_id=suite.pk,
        side=suite.side,
        commit_sha=suite.commit_sha,
        when=result.ended_at or suite.created_at,
        run_id=result.run_id,
    )


def _outcome(result: CaseResult, suite: Suite) -> str:
    if result.state in (CaseState.PENDING, CaseState.GRADING) and suite.state == SuiteState.CEILING:
        return "error"  # the suite's ceiling ended it before it was graded
    return {
        CaseState.PENDING: "running",
        CaseState.GRADING: "running",
    }.get(result.state, str(result.state))


def _failures(result: CaseResult) -> tuple[str, ...]:
    messages = [f"{f.get('assertion', '')}: {f.get('message', '')}".strip(": ") for f in result.failures or ()]
    if result.rubric_verdict == "NO" and not any((f or {}).get("assertion") == "rubric" for f in result.failures or ()):
        messages.append(f"rubric: {result.rubric_reason or 'the judge said no'}")
    if result.state in (CaseState.ERROR, CaseState.BROKEN) and result.cause:
        messages.append(result.cause)
    return tuple(messages)


def suite_cells(suite: Suite | None) -> list[Cell] | None:
    if suite is None:
        return None
    return [cell_of(r, suite) for r in suite.cases.all().order_by("name")]


def suite_comparison(change) -> tuple[Comparison, dict[str, Suite | None]]:
    """The Evals panel: the newest suite of each side, a row per case, totals and deltas."""
    suites = suites_for_change(change)
    main, mine = suites["main"], suites["change"]
    return (
        compare(
            suite_cells(main),
            suite_cells(mine),
            main_totals=_totals(main),
            change_totals=_totals(mine),
        ),
        suites,
    )


def _totals(suite: Suite | None):
    if suite is None:
        return None
    cells = suite_cells(suite) or []
    return side_totals(cells, tokens=suite.tokens_counted or None, cost=suite.cost)


# --- which changes have cases -------------------------------------------------------------------


def cases_prefix(recipe_file: str) -> str:
    """`…/tasks/fix-the-test.md` -> `…/tasks/fix-the-test/evals/`: where its cases live."""
    return recipe_file.removesuffix(".md") + "/evals/"


def change_is_case_edit(change) -> bool:
    return "/evals/" in (change.new_path or change.path or "")


def change_has_cases(change) -> bool:
    """The change touches a recipe that has eval cases (on its head or where it started), or
    edits a case: its Evals panel is shown, and the merge gate applies."""
    if change_is_case_edit(change):
        return True
    if change.action == ChangeAction.DELETE:
        return False
    prefix = cases_prefix(change_recipe_path(change))
    try:
        git = change_request_repo(change)
        return any(
            any(path.startswith(prefix) for path in git.tree(sha)) for sha in (change.head_sha, change.base_sha) if sha
        )
    except RepoError:
        return Suite.objects.filter(change_request=change).exists()


# --- the merge gate --------------------------------------------------------------------------


def merge_blockers(change) -> list[str]:
    """With RYSH_REVIEW_REQUIRE_EVALS on: why `change` may not merge yet (no suite on its head,
    a suite still running, the failing cases by name); [] when it may."""
    if not settings.RYSH_REVIEW_REQUIRE_EVALS or not change_has_cases(change):
        return []
    suite = suites_for_change(change)["change"]
    if suite is None:
        return ["no eval suite has run on this change yet: run the evals"]
    if suite.commit_sha != change.head_sha:
        return [
            f"the newest suite (#{suite.pk}) ran on {suite.commit_sha[:10] or 'another revision'}, "
            f"not on the change's head {change.head_sha[:10]}: run the evals again"
        ]
    cells = suite_cells(suite) or []
    running = [c.name for c in cells if c.outcome == "running"]
    if running:
        return [f"suite #{suite.pk} is still running: {', '.join(running)}"]
    blockers = [_blocker(c) for c in cells if not c.passed]
    if suite.state == SuiteState.CEILING and not blockers:
        blockers.append(f"suite #{suite.pk} was ended by its ceiling")
    if not cells:
        blockers.append(f"suite #{suite.pk} ran no case")
    return blockers


def _blocker(cell: Cell) -> str:
    verb = {"failed": "failed", "error": "errored", "broken": "is broken"}.get(cell.outcome, cell.outcome)
    why = f" ({cell.failures[0]})" if cell.failures else ""
    return f"case {cell.name} {verb}{why}"


# --- a recipe's history ----------------------------------------------------------------------


def recipe_case_history(target: str, *, recent: int = 10) -> dict[str, CaseHistory]:
    """Per case of the recipe `target` (kind/name): its recent results (every side), its pass
    rate over time and whether it is flaky."""
    return case_histories(_recipe_cells(target), recent=recent)


def recipe_suite_rates(target: str) -> list[tuple[int, float]]:
    """The recipe's pass rate per suite on main (every case graded), oldest first: a change's
    suites ran another version, shown beside each case but not in the recipe's own line."""
    return suite_rates(c for c in _recipe_cells(target) if c.side == SuiteSide.MAIN)


def _recipe_cells(target: str) -> list[Cell]:
    suites = list(Suite.objects.filter(target=target).order_by("-created_at", "-id")[:HISTORY_SUITES])
    by_id = {s.pk: s for s in suites}
    results = CaseResult.objects.filter(suite_id__in=by_id).order_by("suite_id", "name")
    return [cell_of(r, by_id[r.suite_id]) for r in results]
