"""/api/…/evals and /api/suites: a recipe's eval suites (docs/evals.md) over HTTP: start one or
see its plan (`auto eval RECIPE`), on a change request both sides, list a recipe's suites, read
one with its cases. Reads need the read scope; a start spends money: the operate scope, and an
owner who is an editor or an admin (the Evals button's rule)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from api.views.common import ApiError, acting
from catalogue.models import Recipe
from catalogue.recipe import NAME_RE
from catalogue.spec import Kind
from evals import services
from evals.links import suite_path
from evals.models import CaseState, Suite, SuiteSide, SuiteState
from reviews.models import ChangeRequest
from runs.services import not_in_catalogue

router = Router(tags=["evals"])
MAX_LIMIT = 200
Provider = Literal["auto", "anthropic", "scripted"]


class EvalStartIn(Schema):
    case: str | None = None  # only this case (`--case`)
    dry_run: bool = False
    provider: Provider | None = None


class ChangeEvalsIn(Schema):
    dry_run: bool = False
    provider: Provider | None = None


class FailureOut(Schema):
    assertion: str  # files_changed | commands_allowed | commands_forbidden | output_matches | max_tokens | rubric
    message: str


class CaseOut(Schema):
    name: str
    folder: str
    state: str  # pending | grading | passed | failed | error | broken
    passed: bool | None  # None until graded
    run: int | None
    worst_tokens: int
    tokens: int
    cost: str | None
    failures: list[FailureOut]
    rubric_verdict: str
    rubric_reason: str
    cause: str
    ended_at: datetime | None


class CountsOut(Schema):
    cases: int
    passed: int
    failed: int
    error: int
    broken: int
    pending: int


class SuiteOut(Schema):
    id: int
    target: str
    side: str  # main | change | path
    change: int | None
    commit: str
    state: str  # running | done | ceiling
    outcome: str  # running | passed | failed | ceiling
    pass_rate: float | None  # passed / graded cases, once any is graded
    counts: CountsOut
    budget_tokens: int
    tokens_counted: int
    cost: str | None
    provider: str
    started_by: str | None
    created_at: datetime
    ended_at: datetime | None
    graded_at: datetime | None
    url: str


class SuiteDetailOut(SuiteOut):
    cases: list[CaseOut]


class SuiteListOut(Schema):
    target: str
    suites: list[SuiteOut]


class PlannedCaseOut(Schema):
    name: str
    folder: str
    worst_tokens: int


class BrokenCaseOut(Schema):
    name: str
    folder: str
    errors: list[str]  # each `file:line field: message`


class PlanOut(Schema):
    target: str
    side: str
    commit: str
    cases: list[PlannedCaseOut]
    broken: list[BrokenCaseOut]
    budget_tokens: int  # the suite's ceiling: the cases' worst cases summed
    lines: list[str]


class DryRunOut(Schema):
    dry_run: Literal[True]
    plan: PlanOut


class StartedOut(Schema):
    dry_run: Literal[False]
    suite: SuiteDetailOut


class SidePlanOut(Schema):
    plan: PlanOut | None
    refused: str | None  # why this side would not start


class SidePlansOut(Schema):
    main: SidePlanOut
    change: SidePlanOut


class ChangeDryRunOut(Schema):
    dry_run: Literal[True]
    change: int
    plans: SidePlansOut


class SideSuitesOut(Schema):
    main: SuiteDetailOut
    change: SuiteDetailOut


class NewestSuitesOut(Schema):
    main: SuiteDetailOut | None  # the newest suite of each side, None before one ran
    change: SuiteDetailOut | None


class ChangeSuitesOut(Schema):
    change: int
    suites: NewestSuitesOut


class ChangeStartedOut(Schema):
    dry_run: Literal[False]
    change: int
    suites: SideSuitesOut


# -- answers --------------------------------------------------------------------------------


def _money(value) -> str | None:
    return str(value) if value is not None else None


GRADED = (CaseState.PASSED, CaseState.FAILED, CaseState.ERROR)


def suite_counts(cases) -> dict:
    states = [case.state for case in cases]
    return {
        "cases": len(states),
        "passed": states.count(CaseState.PASSED),
        "failed": states.count(CaseState.FAILED),
        "error": states.count(CaseState.ERROR),
        "broken": states.count(CaseState.BROKEN),
        "pending": states.count(CaseState.PENDING) + states.count(CaseState.GRADING),
    }


def suite_outcome(suite: Suite, counts: dict) -> str:
    """passed only when every case ran and passed: a broken case is listed, never skipped."""
    if suite.state == SuiteState.CEILING:
        return "ceiling"
    if suite.state == SuiteState.RUNNING:
        return "running"
    return "passed" if counts["cases"] and counts["passed"] == counts["cases"] else "failed"


def suite_summary(suite: Suite) -> dict:
    cases = list(suite.cases.all())
    counts = suite_counts(cases)
    graded = counts["passed"] + counts["failed"] + counts["error"]
    return {
        "id": suite.pk,
        "target": suite.target,
        "side": suite.side,
        "change": suite.change_request_id,
        "commit": suite.commit_sha,
        "state": suite.state,
        "outcome": suite_outcome(suite, counts),
        "pass_rate": round(counts["passed"] / graded, 4) if graded else None,
        "counts": counts,
        "budget_tokens": suite.budget_tokens,
        "tokens_counted": suite.tokens_counted,
        "cost": _money(suite.cost),
        "provider": suite.provider,
        "started_by": suite.user.get_username() if suite.user else None,
        "created_at": suite.created_at,
        "ended_at": suite.ended_at,
        "graded_at": suite.graded_at,
        "url": suite_path(suite),
    }


def case_row(case) -> dict:
    return {
        "name": case.name,
        "folder": case.folder,
        "state": case.state,
        "passed": case.state == CaseState.PASSED if case.state in GRADED else None,
        "run": case.run_id,
        "worst_tokens": case.worst_tokens,
        "tokens": case.tokens,
        "cost": _money(case.cost),
        "failures": [
            {"assertion": str(f.get("assertion", "")), "message": str(f.get("message", ""))}
            for f in case.failures or []
            if isinstance(f, dict)
        ],
        "rubric_verdict": case.rubric_verdict,
        "rubric_reason": case.rubric_reason,
        "cause": case.cause,
        "ended_at": case.ended_at,
    }


def suite_detail(suite: Suite) -> dict:
    return {**suite_summary(suite), "cases": [case_row(case) for case in suite.cases.all()]}


def plan_answer(plan: services.SuitePlan) -> dict:
    return {
        "target": plan.target,
        "side": plan.side,
        "commit": plan.commit_sha,
        "cases": [{"name": p.case.name, "folder": p.case.folder, "worst_tokens": p.worst_tokens} for p in plan.cases],
        "broken": [{"name": c.name, "folder": c.folder, "errors": [str(e) for e in c.errors]} for c in plan.broken],
        "budget_tokens": plan.budget_tokens,
        "lines": list(plan.lines),
    }


def suite_of(suite_id: int) -> Suite:
    return get_object_or_404(Suite.objects.select_related("user").prefetch_related("cases"), pk=suite_id)


def _fresh(suite: Suite) -> Suite:
    return suite_of(suite.pk)


def _refused(exc: services.SuiteRefused) -> ApiError:
    """Nothing was spent; the message says where and what (a file and line, a quota's numbers)."""
    return ApiError(409, str(exc), field="suite")


def _recipe_or_404(kind: str, name: str) -> str:
    """The target of a catalogue recipe: the API never runs cases from a folder on the server."""
    if not NAME_RE.match(name):
        raise ApiError(400, f"name: expected a recipe name ([a-z0-9][a-z0-9._-]*), got {name!r}", field="name")
    if not Recipe.objects.filter(kind=kind, name=name, archived=False).exists():
        raise ApiError(404, not_in_catalogue(kind, name), field="name")
    return f"{kind}/{name}"


def _provider(provider: str | None) -> str | None:
    return None if provider in (None, "auto") else provider


# -- the work, shared with the MCP server -----------------------------------------------------


def eval_start(*, kind: str, name: str, payload: EvalStartIn, owner) -> dict:
    """A suite of a recipe's cases on main started by `owner`, or with `dry_run` its plan."""
    target = _recipe_or_404(kind, name)
    case = (payload.case or "").strip() or None
    try:
        if payload.dry_run:
            return {"dry_run": True, "plan": plan_answer(services.suite_plan(target=target, side="main", case=case))}
        suite = services.suite_start(
            user=owner, target=target, side=SuiteSide.MAIN, case=case, provider=_provider(payload.provider)
        )
    except services.SuiteRefused as exc:
        raise _refused(exc) from None
    return {"dry_run": False, "suite": suite_detail(_fresh(suite))}


def change_evals_start(*, change_id: int, payload: ChangeEvalsIn, owner) -> dict:
    """The Evals panel's button: the cases on main and on the change side by side."""
    change = get_object_or_404(ChangeRequest, pk=change_id)
    if payload.dry_run:
        return {
            "dry_run": True,
            "change": change.pk,
            "plans": {
                "main": _side_plan(target=change.target, side="main", change=change),
                "change": _side_plan(target=change.target, side="change", change=change),
            },
        }
    try:
        main, changed = services.change_suites_start(change=change, user=owner, provider=_provider(payload.provider))
    except services.SuiteRefused as exc:
        raise _refused(exc) from None
    suites = {"main": suite_detail(_fresh(main)), "change": suite_detail(_fresh(changed))}
    return {"dry_run": False, "change": change.pk, "suites": suites}


def _side_plan(*, target: str, side: str, change) -> dict:
    try:
        return {"plan": plan_answer(services.suite_plan(target=target, side=side, change=change)), "refused": None}
    except services.SuiteRefused as exc:
        return {"plan": None, "refused": str(exc)}


def change_suites(*, change_id: int) -> dict:
    """The newest suite of each side of a change request (what its Evals panel compares)."""
    change = get_object_or_404(ChangeRequest, pk=change_id)
    newest = Suite.objects.filter(change_request=change).select_related("user").prefetch_related("cases")
    sides = {side: newest.filter(side=side).first() for side in (SuiteSide.MAIN, SuiteSide.CHANGE)}
    return {"change": change.pk, "suites": {side: suite_detail(s) if s else None for side, s in sides.items()}}


def suites_of(*, target: str, side: str | None = None, limit: int = 20) -> dict:
    if not 1 <= limit <= MAX_LIMIT:
        raise ApiError(400, f"limit: expected 1 to {MAX_LIMIT}, got {limit}", field="limit")
    suites = Suite.objects.filter(target=target).select_related("user").prefetch_related("cases")
    if side:
        suites = suites.filter(side=side)
    return {"target": target, "suites": [suite_summary(s) for s in suites[:limit]]}


def latest_suite(*, target: str) -> Suite:
    found = Suite.objects.filter(target=target).select_related("user").prefetch_related("cases").first()
    if found is None:
        raise ApiError(404, f"{target} has no eval suite yet; start one with start_eval", field="name")
    return found


# -- endpoints --------------------------------------------------------------------------------


@router.post("/recipes/{kind}/{name}/evals", response={200: DryRunOut, 201: StartedOut})
def recipe_evals_start(request: HttpRequest, kind: Kind, name: str, payload: EvalStartIn):
    """Start a suite of the recipe's eval cases on the tracked branch (`auto eval RECIPE`), every
    case a real run under the suite's hard ceiling; `case` runs only that one. With `dry_run` the
    answer is the plan (each case's worst case, the broken cases with their errors, the ceiling)
    and nothing changes. A refusal (broken input, a quota the ceiling does not fit) is a 409 with
    the message. Scope: operate; the owner must be an editor or an admin."""
    with acting(request, "operate", action="edit") as owner:
        started = eval_start(kind=kind, name=name, payload=payload, owner=owner)
        return Status(200 if started["dry_run"] else 201, started)


@router.post("/changes/{change_id}/evals", response={200: ChangeDryRunOut, 201: ChangeStartedOut})
def change_evals(request: HttpRequest, change_id: int, payload: ChangeEvalsIn):
    """Run the cases on a change request's branch and on main side by side (the Evals panel's
    button); `dry_run` answers both plans. Scope: operate; the owner must be an editor or an admin."""
    with acting(request, "operate", action="edit") as owner:
        started = change_evals_start(change_id=change_id, payload=payload, owner=owner)
        return Status(200 if started["dry_run"] else 201, started)


@router.get("/changes/{change_id}/evals", response=ChangeSuitesOut)
def change_evals_show(request: HttpRequest, change_id: int):
    """A change request's newest suite on each side, main and change, with their cases (`null`
    for a side not run yet): poll it after a start. Scope: read."""
    with acting(request, "read"):
        return change_suites(change_id=change_id)


@router.get("/recipes/{kind}/{name}/evals", response=SuiteListOut)
def recipe_evals(
    request: HttpRequest, kind: Kind, name: str, side: Literal["main", "change"] | None = None, limit: int = 20
):
    """A recipe's suites, newest first, each with its state, outcome, pass rate, tokens and cost
    (`side` narrows to main or change-request suites). Scope: read."""
    with acting(request, "read"):
        return suites_of(target=f"{kind}/{name}", side=side, limit=limit)


@router.get("/suites/{suite_id}", response=SuiteDetailOut)
def suite_show(request: HttpRequest, suite_id: int):
    """One suite with its cases: state, pass or fail, each failed assertion and what broke it, the
    rubric's verdict, tokens, cost and the case's run. Scope: read."""
    with acting(request, "read"):
        return suite_detail(suite_of(suite_id))
