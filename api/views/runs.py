"""/api/runs: list and show runs (read), start one or dry-run it, and every control (operate):
the `auto <kind> run|status|history|stop|cancel|continue|resume|land|grant` verbs over HTTP,
each calling the same service the CLI and the pages call."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any, Literal

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from api.views.common import ApiError, acting, refused
from budgets.plan import Grant as PlanGrant
from budgets.units import parse_duration, parse_tokens
from catalogue.models import Recipe
from catalogue.recipe import NAME_RE
from catalogue.spec import Kind
from runs import services
from runs.arming import RUN_OPTION_NAMES
from runs.chains import chain_next
from runs.models import ACTIVE_STATES, Approval, ApprovalState, Run, RunState
from runs.selectors import run_history, run_passes
from runs.states import allowed_controls
from rysh_site.filters import filter_given

router = Router(tags=["runs"])
MAX_LIMIT = 500
Override = Literal[RUN_OPTION_NAMES]  # the per-run overrides (runs/arming.py RUN_OPTIONS), no more


class StartIn(Schema):
    kind: Kind
    name: str
    args: list[str] = []
    dry_run: bool = False
    headless: bool = True
    provider: Literal["auto", "anthropic", "scripted"] | None = None
    overrides: dict[Override, str] = {}
    base: str | None = None  # a coding run: the branch, tag or commit its copy starts from (`--base`)
    workdir: str | None = None  # a coding run's folder of the repository, instead of its workdir:


class GrantIn(Schema):
    passes: int = 0
    total: str = ""  # 200p, 4b
    time: str = ""  # 30m, 1h30m


class RunSummaryOut(Schema):
    id: int
    target: str
    kind: str
    name: str
    args: list[Any]
    state: str
    state_label: str
    phase: str
    cause: str
    finished: bool
    pass_: int = Field(alias="pass")
    passes_planned: Any
    last_verdict: str
    tokens_counted: int
    cost: str | None
    provider: str
    started_by: str | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    resumed_from: int | None
    chain_parent: int | None  # the run whose on_success started this one (docs/chains.md)


class RunListOut(Schema):
    runs: list[RunSummaryOut]


class PassOut(Schema):
    number: int
    phase: str
    verdict: str
    reason: str
    takeover_used: bool
    task_stop: str
    wrap_up_stop: str
    result_file: str
    tokens_counted: int
    steps: int
    started_at: datetime | None
    ended_at: datetime | None


class TokensOut(Schema):
    counted: int
    input: int
    output: int
    cache_read: int
    cache_write: int


class RunDetailOut(RunSummaryOut):
    pause_reason: str
    control_pending: str
    executor_model: str
    judge_model: str
    tokens: TokensOut
    plan: dict[str, Any]
    output_dir: str
    controls: list[str]
    approval_pending: int | None
    passes: list[PassOut]
    chain_depth: int
    chain_next: int | None  # the run this one's success started


class StartDryRunOut(Schema):
    dry_run: bool
    lines: list[str]


class StartedOut(Schema):
    dry_run: bool
    run: RunSummaryOut


class ControlOut(Schema):
    message: str
    run: RunSummaryOut


def run_summary(run: Run) -> dict:
    return {
        "id": run.pk,
        "target": run.target,
        "kind": run.kind,
        "name": run.name,
        "args": list(run.args),
        "state": run.state,
        "state_label": run.state_label,
        "phase": run.phase,
        "cause": run.cause,
        "finished": run.state == RunState.FINISHED,
        "pass": run.pass_number,
        "passes_planned": run.plan.get("passes", 1),
        "last_verdict": run.last_verdict,
        "tokens_counted": run.tokens_counted,
        "cost": str(run.cost) if run.cost is not None else None,
        "provider": run.provider,
        "started_by": run.user.get_username() if run.user else None,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "resumed_from": run.resumed_from_id,
        "chain_parent": run.chain_parent_id,
    }


def run_detail(run: Run) -> dict:
    passes = [
        {
            "number": p.number,
            "phase": p.phase,
            "verdict": p.verdict,
            "reason": p.reason,
            "takeover_used": p.takeover_used,
            "task_stop": p.task_stop,
            "wrap_up_stop": p.wrap_up_stop,
            "result_file": p.result_file,
            "tokens_counted": p.tokens_counted,
            "steps": p.steps_total,
            "started_at": p.started_at,
            "ended_at": p.ended_at,
        }
        for p in run_passes(run)
    ]
    pending = Approval.objects.filter(run=run, state=ApprovalState.PENDING).first()
    return {
        **run_summary(run),
        "pause_reason": run.pause_reason,
        "control_pending": run.control,
        "executor_model": run.executor_model,
        "judge_model": run.judge_model,
        "tokens": {
            "counted": run.tokens_counted,
            "input": run.input_tokens,
            "output": run.output_tokens,
            "cache_read": run.cache_read_tokens,
            "cache_write": run.cache_write_tokens,
        },
        "plan": run.plan,
        "output_dir": run.output_dir,
        "controls": allowed_controls(run),
        "approval_pending": pending.pk if pending else None,
        "passes": passes,
        "chain_depth": run.chain_depth,
        "chain_next": getattr(chain_next(run), "pk", None),
    }


@router.get("/runs", response=RunListOut, by_alias=True)
def run_list(
    request: HttpRequest,
    state: Literal["active", "finished", "any"] = "any",
    recipe: str = "",
    kind: Kind | None = None,
    cause: str = "",
    since: date | None = None,
    until: date | None = None,
    limit: int = 50,
):
    """Runs, newest first. `state=finished` filters like the History page (recipe, kind, cause,
    ended from `since` to `until`); `active` lists what the Live runs page shows. Scope: read."""
    with acting(request, "read"):
        if not 1 <= limit <= MAX_LIMIT:
            raise ApiError(400, f"limit: expected 1 to {MAX_LIMIT}, got {limit}", field="limit")
        if state == "finished":
            runs = run_history(recipe=recipe, kind=kind or "", cause=cause, since=since, until=until)
        else:
            runs = filter_given(
                Run.objects.filter(state__in=ACTIVE_STATES) if state == "active" else Run.objects.all(),
                name__icontains=recipe,
                kind=kind or "",
                cause__icontains=cause,
                created_at__date__gte=since,
                created_at__date__lte=until,
            ).order_by("-created_at", "-id")
        runs = runs.select_related("user").defer("recipe_text")[:limit]
        return {"runs": [run_summary(r) for r in runs]}


@router.get("/runs/{run_id}", response=RunDetailOut, by_alias=True)
def run_show(request: HttpRequest, run_id: int):
    """One run: state, cause, passes with their verdicts and reasons, tokens and cost, the
    controls that apply now. Scope: read."""
    with acting(request, "read"):
        return run_detail(run_of(run_id))


@router.post("/runs", response={200: StartDryRunOut, 201: StartedOut}, by_alias=True)
def run_start(request: HttpRequest, payload: StartIn):
    """Start a run of a catalogue recipe (`auto <kind> run NAME ARGS…`). With `dry_run: true`
    the answer is the preview (prompt, plan, quotas) and nothing is changed. Scope: operate."""
    with acting(request, "operate") as owner:
        started = start(payload, owner=owner)
        return Status(200 if started["dry_run"] else 201, started)


def start(payload: StartIn, *, owner) -> dict:
    """`payload`'s run started by `owner` (`{"dry_run": False, "run": …}`), or with `dry_run`
    its preview (`{"dry_run": True, "lines": …}`) and nothing changed; ApiError 400/404/409."""
    if not NAME_RE.match(payload.name):
        raise ApiError(400, f"name: expected a recipe name ([a-z0-9][a-z0-9._-]*), got {payload.name!r}", field="name")
    _exists_or_404(payload.kind, payload.name)
    try:
        result = services.run_start(
            kind=payload.kind,
            name_or_path=payload.name,
            args=payload.args,
            user=owner,
            headless=payload.headless,
            overrides={k: v for k, v in payload.overrides.items() if v},
            provider=payload.provider,
            dry_run=payload.dry_run,
            base=(payload.base or "").strip() or None,
            workdir=payload.workdir,
            catalogue_only=True,
        )
    except services.RunRefused as exc:
        raise refused(exc) from None
    if isinstance(result, services.DryRun):
        return {"dry_run": True, "lines": result.lines}
    return {"dry_run": False, "run": run_summary(result)}


def _exists_or_404(kind: str, name: str) -> None:
    """A recipe of the catalogue, and only that: the API never runs a file, not one in the
    recipes repository's working tree, not one in the server's working directory."""
    if not Recipe.objects.filter(kind=kind, name=name, archived=False).exists():
        raise ApiError(404, services.not_in_catalogue(kind, name), field="name")


def run_of(run_id: int) -> Run:
    return get_object_or_404(Run.objects.select_related("user"), pk=run_id)


def _control(request: HttpRequest, run_id: int, service: Callable[..., str]) -> dict:
    with acting(request, "operate") as owner:
        return control(run_id, service, owner=owner)


def control(run_id: int, service: Callable[..., str], *, owner) -> dict:
    """A control (`services.run_stop`, `run_continue`…) on a run by `owner`: its message and the
    run after it; ApiError 409 when it does not apply now, Http404 for no such run."""
    return _controlled(run_id, lambda run: service(run=run, user=owner))


def _controlled(run_id: int, call: Callable[[Run], str]) -> dict:
    run = run_of(run_id)
    try:
        said = call(run)
    except services.RunRefused as exc:
        raise refused(exc) from None
    run.refresh_from_db()
    return {"message": said, "run": run_summary(run)}


@router.post("/runs/{run_id}/stop", response=ControlOut, by_alias=True)
def run_stop(request: HttpRequest, run_id: int):
    """Graceful: the pass in flight finishes, is not judged, the run ends. Scope: operate."""
    return _control(request, run_id, services.run_stop)


@router.post("/runs/{run_id}/cancel", response=ControlOut, by_alias=True)
def run_cancel(request: HttpRequest, run_id: int):
    """Interrupt now; the conversation is kept (`paused(cancelled)`). Scope: operate."""
    return _control(request, run_id, services.run_cancel)


@router.post("/runs/{run_id}/continue", response=ControlOut, by_alias=True)
def run_continue(request: HttpRequest, run_id: int):
    """A paused run picks up from its checkpoint. Scope: operate."""
    return _control(request, run_id, services.run_continue)


@router.post("/runs/{run_id}/land", response=ControlOut, by_alias=True)
def run_land(request: HttpRequest, run_id: int):
    """Hand the wheel to the wrap-up prompt now. Scope: operate."""
    return _control(request, run_id, services.run_land)


@router.post("/runs/{run_id}/resume", response={201: ControlOut}, by_alias=True)
def run_resume(request: HttpRequest, run_id: int):
    """A fresh run seeded with this one's latest result; the answer is the new run. Scope: operate."""
    with acting(request, "operate") as owner:
        previous = run_of(run_id)
        try:
            new = services.run_resume(run=previous, user=owner)
        except services.RunRefused as exc:
            raise refused(exc) from None
        return Status(201, {"message": f"run #{new.pk} started, resuming run #{previous.pk}", "run": run_summary(new)})


@router.post("/runs/{run_id}/grant", response=ControlOut, by_alias=True)
def run_grant(request: HttpRequest, run_id: int, payload: GrantIn):
    """More passes, outer total or outer time for a run that ended at an outer ceiling; it
    goes on as the same run. Scope: operate."""
    with acting(request, "operate") as owner:
        grant = _grant(payload)
        return _controlled(run_id, lambda run: services.run_grant(run=run, extra=grant, user=owner))


def _grant(payload: GrantIn) -> PlanGrant:
    """The grant asked for, or 400 naming each field that cannot be read."""
    errors = []
    extra = {"passes": payload.passes, "tokens": 0, "seconds": 0}
    if payload.passes < 0:
        errors.append({"field": "passes", "message": f"expected 0 or more, got {payload.passes}"})
    for name, key, parse in (("total", "tokens", parse_tokens), ("time", "seconds", parse_duration)):
        raw = getattr(payload, name).strip()
        try:
            extra[key] = parse(raw) if raw else 0
        except ValueError as exc:
            errors.append({"field": name, "message": f"{name}: {exc}"})
    if errors:
        raise ApiError(400, errors[0]["message"], errors=errors)
    return PlanGrant(**extra)
