"""Recipe checks that need more than the text: registered by the apps that can answer them.

The recipe reader is pure (no database), yet some errors need one: `notify:` names channels
that live in the notify app's table. The catalogue cannot import notify (notify imports the
catalogue's spec: a circle), so notify registers a check here when its app is ready, and sync,
`auto check` and the editor call `extra_issues()` after a recipe parsed. Each check takes a
RecipeSpec and returns RecipeIssues (file, line, field, expected), like the reader's own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from budgets.efforts import effort_refusal, takes_effort
from catalogue.recipe import RecipeError, RecipeIssue, parse_recipe
from catalogue.spec import RecipeSpec

Check = Callable[[RecipeSpec], list[RecipeIssue]]


def effort_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    """`effort:` on a recipe that does not pin its model is checked against the installation's
    default model (settings), which the pure reader cannot see; a pinned model is the reader's."""
    if spec.effort is None or spec.do.effort is not None or spec.executor_model is not None:
        return []
    from django.conf import settings  # read when the check runs: the default may be overridden

    model = settings.RYSH_EXECUTOR_MODEL
    if takes_effort(model):
        return []
    return [RecipeIssue(PurePath(spec.path).name, spec.effort_line, "effort", effort_refusal(model))]


def leg_effort_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    """The loop's own efforts (`loop.do.effort`, `loop.do.budget.watch.effort`,
    `loop.while.effort`) on a leg whose model is the installation's default."""
    from django.conf import settings  # read when the check runs: the defaults may be overridden

    do, judge = spec.do, spec.loop_while
    seats = (
        (do.effort, do.effort_line, spec.executor_model, settings.RYSH_EXECUTOR_MODEL, "loop.do.effort"),
        (
            do.watch_effort,
            do.watch_effort_line,
            spec.wrapup_model,
            settings.RYSH_EXECUTOR_MODEL,
            "loop.do.budget.watch.effort",
        ),
        (judge.effort, judge.effort_line, spec.judge, settings.RYSH_JUDGE_MODEL, "loop.while.effort"),
    )
    name = PurePath(spec.path).name
    return [
        RecipeIssue(name, line, field, effort_refusal(default))
        for effort, line, pinned, default, field in seats
        if effort is not None and pinned is None and not takes_effort(default)
    ]


EXTRA_CHECKS: list[Check] = [effort_issues, leg_effort_issues]


def register(check: Check) -> Check:
    """Add a check once (an app's ready() may run twice in tests)."""
    if check not in EXTRA_CHECKS:
        EXTRA_CHECKS.append(check)
    return check


# Checks of a version as sync stored it (its spec as a dict): why a version valid at sync
# cannot run now that the database says otherwise (an MCP server removed since), or None.
StoredCheck = Callable[[dict], str | None]
STORED_CHECKS: list[StoredCheck] = []


def register_stored(check: StoredCheck) -> StoredCheck:
    if check not in STORED_CHECKS:
        STORED_CHECKS.append(check)
    return check


def stored_problem(spec: dict) -> str | None:
    """The first reason a stored version cannot run now, or None (the catalogue's "runnable")."""
    return next((problem for check in STORED_CHECKS if (problem := check(spec or {}))), None)


def extra_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    """Every registered check's issues for a recipe that parsed, in file order."""
    issues = [issue for check in EXTRA_CHECKS for issue in check(spec)]
    return sorted(issues, key=lambda i: (i.line or 0, i.column or 0))


def text_issues(text: str, *, path: str, kind: str, name: str) -> list[RecipeIssue]:
    """The extra checks' issues for a text; [] when it does not parse (the reader's own
    errors are shown then, and the extra checks would have nothing to look at)."""
    try:
        spec = parse_recipe(text, path=path, kind=kind, name=name)
    except RecipeError:
        return []
    return extra_issues(spec)
