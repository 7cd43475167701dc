"""/api/runs/{id}/fork and /api/runs/{a}/compare/{b} (docs/forks.md): `auto <kind> fork` and
`auto <kind> compare` over HTTP, through the same functions. A fork spends money: the operate
scope (who may start a run may fork); a comparison reads: the read scope."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import ConfigDict, Field

from api.views.common import ApiError, acting
from api.views.runs import run_of, run_summary
from runs import forks
from runs.forks import compare
from runs.forks.shown import as_data, compare_lines, plan_data, same_recipe_problem

router = Router(tags=["forks"])


class ForkIn(Schema):
    model_config = ConfigDict(populate_by_name=True)

    # `pass` is a Python keyword: the body says "pass", the schema reads it as pass_number
    pass_number: int = Field(alias="pass")
    redo: bool = False
    prompt: str | None = None
    iterate_with: str | None = None
    until: str | None = None
    model: str | None = None
    effort: str | None = None
    budget: str | None = None  # a size in the recipe's units (2b, 40p): the fork's whole budget
    dry_run: bool = False
    provider: Literal["auto", "anthropic", "scripted"] | None = None


class RunRefOut(Schema):
    id: int
    target: str
    state: str
    cause: str


class ForkPlanOut(Schema):
    parent: RunRefOut
    from_pass: int  # the parent's pass whose end state the fork starts from (0: the start)
    redo: bool
    passes_left: int  # the passes the fork may run
    worst_tokens: int
    worst_money: str | None  # USD; None: a model has no price
    parent_spent_tokens: int  # what the parent spent up to there: not paid again
    executor: str
    judge: str
    notes: list[str]
    lines: list[str]  # what `auto task fork` prints before it starts
    recipe_text: str


class ForkDryRunOut(Schema):
    dry_run: Literal[True]
    plan: ForkPlanOut


class ForkStartedOut(Schema):
    dry_run: Literal[False]
    plan: ForkPlanOut
    run: dict[str, Any]  # the run as /api/runs/{id} lists it, with forked_from and fork_pass
    forked_from: int
    fork_pass: int | None


class CompareOut(Schema):
    a: RunRefOut
    b: RunRefOut
    # runs.forks.compare's figures: passes (per position from the lineage's root: each run's pass with its
    # verdict, tokens, cost, seconds, diff stat), files (the final results, each same, changed with
    # its diff, or only in one), diff_a and diff_b (each run's whole diff), prompt_diff, settings
    comparison: dict[str, Any]
    lines: list[str]  # what `auto <kind> compare` prints


def fork_of(run_id: int, payload: ForkIn, *, owner) -> dict:
    """The plan of a fork of run `run_id` (with `dry_run`, nothing more) or the fork started by
    `owner`; a ForkRefused is a 400 naming its field (a 409 on `state` when no field is to blame)."""
    parent = run_of(run_id)
    edits = forks.ForkEdits(
        prompt=payload.prompt,
        iterate_with=payload.iterate_with,
        until=payload.until,
        model=payload.model,
        effort=payload.effort,
        budget=payload.budget,
    )
    asked = dict(run=parent, pass_number=payload.pass_number, redo=payload.redo, edits=edits)
    try:
        plan = forks.fork_plan(**asked)
        shown = plan_data(plan)
        if payload.dry_run:
            return {"dry_run": True, "plan": shown}
        run = forks.run_fork(**asked, user=owner, provider=payload.provider)
    except forks.ForkRefused as exc:
        field = "pass" if exc.field == "pass_number" else exc.field
        raise ApiError(400 if field else 409, str(exc), field=field or "state") from None
    summary = {**run_summary(run), "forked_from": run.forked_from_id, "fork_pass": run.fork_pass}
    return {"dry_run": False, "plan": shown, "run": summary, "forked_from": parent.pk, "fork_pass": run.fork_pass}


def compare_of(a_id: int, b_id: int) -> dict:
    a, b = run_of(a_id), run_of(b_id)
    if problem := same_recipe_problem(a, b):
        raise ApiError(400, problem, field="b")
    try:
        comparison = compare.runs_compare(a, b)
    except compare.CompareRefused as exc:
        raise ApiError(400, str(exc), field="b") from None
    return {"a": as_data(a), "b": as_data(b), "comparison": as_data(comparison), "lines": compare_lines(comparison)}


@router.post("/runs/{run_id}/fork", response={200: ForkDryRunOut, 201: ForkStartedOut})
def run_fork(request: HttpRequest, run_id: int, payload: ForkIn):
    """Fork a run from the end of pass `pass` (`redo`: pass `pass` again, from the end of the one
    before), with the edits given (prompt, iterate_with, until, model, effort, budget; left out:
    as the parent's recipe version has them). With `dry_run: true` the answer is the plan — where
    it starts, the fork's worst case, what the parent spent up to there — and nothing is started.
    Scope: operate."""
    with acting(request, "operate") as owner:
        answer = fork_of(run_id, payload, owner=owner)
        return Status(200 if answer["dry_run"] else 201, answer)


@router.get("/runs/{a_id}/compare/{b_id}", response=CompareOut)
def run_compare(request: HttpRequest, a_id: int, b_id: int):
    """Two runs of one recipe side by side: per pass verdict, tokens, $, time and diff stat; the
    final results and diffs compared; the prompt edits between them. Scope: read."""
    with acting(request, "read"):
        return compare_of(a_id, b_id)
