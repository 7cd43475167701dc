"""Forks (docs/forks.md): a new run of a run's recipe version that starts from the state at the end
of one of its passes — its results folder, its working copy (a new copy made from that pass's
restorable point, on its own branch), the verdict and `iterate_with` that pass produced — and goes
on with the next pass, with the person's edits (prompt, `iterate_with`, `until`, model, effort,
budget). "Redo pass N" starts from the end of pass N-1. Earlier passes are not paid again."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db.models import Sum

from agents.providers import ProviderError, preflight_models
from budgets.guard import MIN_USEFUL_OUTPUT, REQUEST_OVERHEAD
from budgets.units import PAGE, UnitError, format_tokens, parse_tokens
from catalogue.plan_report import models_for
from catalogue.recipe import RecipeError, parse_recipe
from catalogue.repo import open_repo
from runs import events
from runs.arming import (
    EFFORT_OVERRIDE,
    ITERATE_OVERRIDE,
    MODEL_OVERRIDE,
    PROMPT_OVERRIDE,
    UNTIL_OVERRIDE,
    OverrideError,
    apply_overrides,
    arm,
)
from runs.forks.points import BROWSER_NOT_RESTORED, fork_caveat, fork_points  # noqa: F401 (the interface)
from runs.models import LedgerEntry, Pass, Run
from runs.outlook import WorstCase
from runs.results import snapshots
from runs.services import FORK_SLOT, ForkStart, RecipeSource, RunRefused, run_start
from runs.states import EventKind
from rysh_site.roles import require
from workspaces.models import Workspace, WorkspacePass
from workspaces.source import Source


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
    worst_money: object | None = None  # a Decimal; None: a model has no price
    overrides: dict = field(default_factory=dict)  # the parent's, with the edits: what the fork arms with
    passes_left: int = 0  # the passes the fork may run: from_pass+1 … the recipe's last
    executor: str = ""
    judge: str = ""


# the edits, as the run's overrides keep them (runs/arming.py): the worker re-arms the fork with them
EDIT_OVERRIDES = {
    "prompt": PROMPT_OVERRIDE,
    "iterate_with": ITERATE_OVERRIDE,
    "until": UNTIL_OVERRIDE,
    "model": MODEL_OVERRIDE,
    "effort": EFFORT_OVERRIDE,
    "budget": "total",
}
FORK_ACTION = "operate"  # who may start a run may fork one (rysh_site/roles.py)
ONE_STEP = REQUEST_OVERHEAD + MIN_USEFUL_OUTPUT  # the least one model call needs


def _from_pass(run: Run, pass_number: int, redo: bool) -> int:
    if redo and pass_number < 1:
        raise ForkRefused(f"redo: expected a pass of run #{run.pk} (1 or more), got {pass_number}", field="pass")
    from_pass = pass_number - 1 if redo else pass_number
    points = fork_points(run)
    if from_pass not in points:
        forkable = ", ".join(str(n) for n, why in sorted(points.items()) if not why) or "none"
        raise ForkRefused(f"run #{run.pk} has no pass {from_pass} to fork from (forkable: {forkable})", field="pass")
    if points[from_pass]:
        raise ForkRefused(f"run #{run.pk}: {points[from_pass]}", field="pass")
    return from_pass


def _overrides(run: Run, edits: ForkEdits, *, passes_left: int) -> dict:
    """The parent's overrides with the edits; each edit checked on its own, so a refusal names it.
    The budget is the fork's whole budget (the loop's `total`); a pass's share is capped to it
    split over the passes left, since a total at or below one pass's size would not hold."""
    edited = edits.edited()
    if "until" in edited and not str(edited["until"]).strip():
        raise ForkRefused("until: the goal the judge checks cannot be empty", field="until")
    if "prompt" in edited and not str(edited["prompt"]).strip():
        raise ForkRefused("prompt: the task prompt cannot be empty", field="prompt")
    spec = apply_overrides(parse_recipe(run.recipe_text, path=run.recipe_path, kind=run.kind), run.overrides)
    overrides = dict(run.overrides)
    if "budget" in edited:
        try:
            tokens = parse_tokens(edited["budget"])
        except UnitError as exc:
            raise ForkRefused(f"budget: {exc}", field="budget") from None
        _refuse_below_one_step(tokens)
        overrides.update(budget_overrides(tokens, passes_left=passes_left, per_pass=spec.do.budget_size))
    for name, value in edited.items():
        if name == "budget":
            continue  # as budget_overrides put it
        key = EDIT_OVERRIDES[name]
        try:
            apply_overrides(spec, {key: value})
        except OverrideError as exc:
            raise ForkRefused(str(exc), field=name) from None
        overrides[key] = value
    return overrides


def budget_overrides(tokens: int, *, passes_left: int, per_pass: int) -> dict:
    """A budget edit as overrides (pure): the loop's `total`, and a pass's share when the
    recipe's is larger than the total split over the passes left — else a total at or below one
    pass's size would be no ceiling at all (budgets.plan.redistribute). Either way the fork holds
    to `tokens`: by the outer ceiling, or by its passes left times a pass's share."""
    found = {"total": f"{max(tokens // PAGE, 1)}p"}  # a size is whole pages (budgets.units)
    share = tokens // max(passes_left, 1) // PAGE
    if share * PAGE < per_pass:
        found["budget"] = f"{max(share, 1)}p"
    return found


def _refuse_below_one_step(tokens: int) -> None:
    if tokens < ONE_STEP:
        raise ForkRefused(
            f"budget: {format_tokens(tokens)} tokens is below what one step needs ({format_tokens(ONE_STEP)})",
            field="budget",
        )


def _version_notes(run: Run) -> list[str]:
    """The recipe's file changed since the parent ran: the fork runs the parent's version."""
    recipe = run.recipe
    if recipe is not None and run.recipe_version_id and recipe.good_id and recipe.good_id != run.recipe_version_id:
        return [
            f"the recipe {run.target} changed since run #{run.pk} (now {recipe.good.commit_sha[:8]}); the fork "
            f"runs the parent's version {run.recipe_version.commit_sha[:8]}, with the edits"
        ]
    if recipe is None and run.recipe_path and Path(run.recipe_path).is_file():
        if Path(run.recipe_path).read_text(encoding="utf-8") != run.recipe_text:
            return [f"the recipe file {run.recipe_path} changed since run #{run.pk}; the fork runs the parent's text"]
    return []


def fork_plan(
    *,
    run: Run,
    pass_number: int,
    redo: bool = False,
    edits: ForkEdits | None = None,
    target: str | None = None,
) -> ForkPlan:
    """Raises ForkRefused (with `field`) before anything is spent. `target` (`task/fix`): the
    recipe the caller named, refused when the run is another's."""
    if target is not None and target != run.target:
        raise ForkRefused(f"run #{run.pk} is a run of {run.target}, not of {target}", field="run")
    edits = edits or ForkEdits()
    from_pass = _from_pass(run, pass_number, redo)
    try:
        _spec, as_ran = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=run.overrides)
        left = as_ran.passes - from_pass
        overrides = _overrides(run, edits, passes_left=left)
        spec, plan = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=overrides)
    except (RecipeError, OverrideError) as exc:
        raise ForkRefused(str(exc)) from None
    if left < 1:
        raise ForkRefused(
            f"pass {from_pass} is the last of the recipe's {plan.passes} pass(es): nothing is left to run after it; "
            f"redo it (--redo) instead",
            field="pass",
        )
    # a pass's task leg, and the whole loop's budget when it has one: either below one call's
    # least and the fork could not take a single step
    _refuse_below_one_step(min(plan.split.task.tokens, plan.outer_tokens or plan.split.task.tokens))
    executor, judge = models_for(spec)
    if "model" in edits.edited() and run.provider == "anthropic":
        try:
            preflight_models([executor])
        except ProviderError as exc:
            raise ForkRefused(f"model: {exc}", field="model") from None
    if run.provider == "scripted":
        executor = judge = run.executor_model
    worst = WorstCase.of(dataclasses.replace(plan, passes=left), executor=executor, judge=judge)
    spent = LedgerEntry.objects.filter(run=run, pass_number__lte=from_pass).aggregate(n=Sum("counted_tokens"))["n"]
    notes = _version_notes(run) + ([fork_caveat(run)] if fork_caveat(run) else [])
    said = f"redo of pass {pass_number}" if redo else f"from pass {from_pass}"
    lines = [
        f"fork of run #{run.pk} ({run.target}) {said}: it starts as pass {from_pass} ended and runs pass "
        f"{from_pass + 1} on (at most {left} pass(es))",
        f"{worst.text()}; run #{run.pk} spent {format_tokens(spent or 0)} tokens up to there (not paid again)",
        *plan.summary_lines(),
    ]
    return ForkPlan(
        parent=run,
        from_pass=from_pass,
        redo=redo,
        recipe_text=run.recipe_text,
        worst_tokens=worst.tokens,
        parent_spent_tokens=spent or 0,
        notes=notes,
        lines=lines,
        worst_money=worst.money,
        overrides=overrides,
        passes_left=left,
        executor=executor,
        judge=judge,
    )


def run_fork(
    *,
    run: Run,
    pass_number: int,
    user,
    redo: bool = False,
    edits: ForkEdits | None = None,
    provider: str | None = None,
    target: str | None = None,
) -> Run:
    """Start the fork (quotas, notifications, audit `run.fork` apply: it is a run). Raises ForkRefused;
    PermissionDenied for a person whose role cannot start runs (the command line has no user)."""
    if getattr(user, "is_authenticated", False):
        require(user, FORK_ACTION)
    edits = edits or ForkEdits()
    plan = fork_plan(run=run, pass_number=pass_number, redo=redo, edits=edits, target=target)
    token = uuid.uuid4().hex[:10]
    said = f"redo of pass {pass_number}" if redo else f"at pass {plan.from_pass}"
    source = RecipeSource(
        kind=run.kind,
        name=run.name,
        path=run.recipe_path,
        text=run.recipe_text,
        recipe=run.recipe,
        version=run.recipe_version,
        notes=[f"forked from run #{run.pk} {said}", *plan.notes],
        script=Path(run.script_path) if run.script_path else None,
    )
    fork = ForkStart(
        parent=run,
        from_pass=plan.from_pass,
        redo=redo,
        edits=edits.edited(),
        source=source,
        slot=_slot(run, token),
        output_dir=str(Path(settings.RYSH_RESULTS_DIR) / "forks" / run.kind / run.name / token),
        restore=lambda new, folder: fork_restore_results(run, plan.from_pass, folder, new_run=new),
        **_copy_from(run, plan.from_pass),
    )
    try:
        return run_start(
            kind=run.kind,
            name_or_path=run.name,
            args=list(run.args),
            user=user,
            headless=run.headless,
            overrides=plan.overrides,
            provider=provider or run.provider,
            fork=fork,
        )
    except ForkRefused:
        raise
    except RunRefused as exc:
        raise ForkRefused(str(exc)) from None


def _slot(run: Run, token: str) -> str:
    """A fork's own slot, so it goes on beside a running parent; a web recipe's runs share one
    browser profile, so its fork takes the recipe's slot as any run of it does (refused while
    another run of it is active)."""
    if run.kind == "web":
        return run.target
    return f"{FORK_SLOT}{run.target}/{token}"[:260]


def _copy_from(run: Run, from_pass: int) -> dict:
    """Where a coding fork's copy is made from: the pass's point in the parent's copy, or (pass 0)
    the commit the parent's copy was made from."""
    workspace = Workspace.objects.filter(run=run).first()
    if workspace is None:
        return {}
    if from_pass:
        return {
            "point": WorkspacePass.objects.select_related("workspace").get(workspace=workspace, pass_number=from_pass)
        }
    location = workspace.source_path or str(open_repo(settings.RYSH_RECIPES_REPO).git_dir)
    copy = Source(
        location=location,
        shown=workspace.source,
        commit=workspace.base_commit,
        ref=workspace.base_ref,
        recipes_repo=not workspace.source_path,
    )
    return {"copy": copy}


def fork_restore_results(parent: Run, from_pass: int, folder: Path, *, new_run: Run | None = None) -> list[str]:
    """The parent's results as they stood at the end of `from_pass` (its snapshot) written into
    the fork's `folder` (empty for pass 0). Returns the names that could not be restored (too
    large to keep, or their content gone), each said on the fork's page."""
    if not from_pass:
        return []
    run_pass = Pass.objects.get(run=parent, number=from_pass)
    missing = snapshots.restore_pass(run_pass, Path(folder))
    if missing and new_run is not None:
        events.record(new_run, EventKind.NOTE, f"not restored from pass {from_pass} (not kept): {', '.join(missing)}")
    return missing
