"""Run services: start, stop, cancel, continue, resume, land now (docs/running-loops.md), and the sweeper.

Controls only write a request or an atomic state change on the Run; the engine, in its
worker, reads requests between steps. Every refusal is a RunRefused whose message says
what to do instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from agents.providers import ProviderError, choose_provider, preflight_anthropic, preflight_models, script_beside
from agents.sandbox import sandbox_problem
from audit.services import audit_record
from budgets.plan import Grant as PlanGrant
from budgets.plan import grant_refusal
from budgets.units import format_duration, format_tokens
from catalogue.checks import extra_issues
from catalogue.models import Recipe, RecipeVersion
from catalogue.plan_report import model_notes, models_for, plan_lines, wrapup_for
from catalogue.recipe import RecipeError, parse_recipe, resolve_output_dir
from catalogue.selectors import results_folder_owner
from catalogue.spec import FOLDER_WORDS, Kind
from catalogue.workdir import find_recipe
from policies.ceilings import lower_plan
from policies.rules import Merged
from policies.selectors import PolicyBroken, policy_for_run
from runs import approvals, events
from runs.arming import (
    WORKDIR_OVERRIDE,
    OverrideError,
    arm,
    first_message,
    plan_snapshot,
    previewed_workdir,
    start_page,
)
from runs.chains import chain_quota_lines, chain_quota_refusal
from runs.engine import finish_run
from runs.ledger import settle_pending_steps
from runs.models import ACTIVE_STATES, BLOCKING_RUN, Approval, ApprovalState, Control, Grant, Pass, Run, RunState
from runs.outlook import WorstCase, price_warnings, quota_lines
from runs.results.report import write_report
from runs.selectors import run_pruned, worker_sandboxes
from runs.signals import run_paused
from runs.slots import run_slot, slot_folder
from runs.states import WORKING_STATES, EventKind, PauseReason, Phase, allowed_controls
from runs.wiring import sandbox_config, site_url
from rysh_site import tracing
from workspaces.models import WorkspaceState
from workspaces.services import WorkspaceRefused, workspace_arm, workspace_carries, workspace_source
from workspaces.setup import setup_line
from workspaces.source import Source as CopySource

log = logging.getLogger(__name__)
EXECUTE_FUNC = "runs.worker.execute_run"  # the worker's entry point, queued by path


SCRIPTED_MODEL = "scripted-demo"


class RunRefused(Exception):
    """A control that cannot be carried out; the message says why and what to do. `holder`: the
    active run in the way (the pages link it)."""

    def __init__(self, message: str, *, holder: Run | None = None):
        super().__init__(message)
        self.holder = holder


@dataclass
class RecipeSource:
    kind: str
    name: str
    path: str
    text: str
    recipe: Recipe | None = None
    version: RecipeVersion | None = None
    notes: list[str] = field(default_factory=list)
    script: Path | None = None
    package: object | None = None  # the PackageVersion it was built from (runs.packages)


def recipe_source(*, kind: str, name_or_path: str, catalogue_only: bool = False) -> RecipeSource:
    """The text a run is armed with: the catalogue's last good version, else a file (a path, or
    a recipe in the recipes repository's working tree). `catalogue_only` — the web, the API and
    MCP — never reads a file: what the catalogue does not hold is refused, whatever is on disk;
    only the command line runs a file (docs/command-line.md)."""
    is_path = name_or_path.endswith(".md") or "/" in name_or_path
    if catalogue_only:
        found = None if is_path else _from_catalogue(kind, name_or_path)
        if found is None:
            raise RunRefused(not_in_catalogue(kind, name_or_path))
        return found
    if not is_path:
        found = _from_catalogue(kind, name_or_path)
        if found is not None:
            return found
    try:
        path = find_recipe(name_or_path, kind=kind, root=settings.RYSH_RECIPES_REPO)
    except FileNotFoundError as exc:
        raise RunRefused(str(exc)) from None
    return RecipeSource(
        kind=kind, name=path.stem, path=str(path), text=path.read_text(encoding="utf-8"), script=script_beside(path)
    )


def not_in_catalogue(kind: str, name: str) -> str:
    return (
        f"no {kind} recipe named {name!r} in the catalogue (the recipes synced from the recipes repository); "
        f"a recipe file runs only from the command line: auto {kind} run PATH"
    )


def _from_catalogue(kind: str, name: str) -> RecipeSource | None:
    recipe = Recipe.objects.filter(kind=kind, name=name, archived=False).select_related("good", "latest").first()
    if recipe is None:
        return None
    if recipe.good is None:
        errors = "\n".join(recipe.latest.errors if recipe.latest else [])
        raise RunRefused(f"{recipe.target} has no valid version to run:\n{errors}")
    notes = []
    if recipe.latest_id and recipe.latest_id != recipe.good_id:
        notes.append(
            f"the newest version of {recipe.target} ({recipe.latest.commit_sha[:8]}) is broken; "
            f"running the last good version ({recipe.good.commit_sha[:8]})"
        )
    return RecipeSource(
        kind=kind,
        name=name,
        path=recipe.good.path,
        text=recipe.good.text,
        recipe=recipe,
        version=recipe.good,
        notes=notes,
        script=script_of(recipe.good.path),
    )


def script_of(relative: str) -> Path | None:
    """The offline script of a file of the recipes repository (`<name>.script.yaml` beside it:
    agents.providers), in the repository's working tree or the demo's own copy."""
    demo_copy = Path(settings.BASE_DIR) / "demo" / "recipes" / relative
    return script_beside(Path(settings.RYSH_RECIPES_REPO) / relative) or script_beside(demo_copy)


@dataclass
class DryRun:
    lines: list[str]


EVAL_SLOT = "eval/"  # the slots of eval cases' runs: eval/<suite>/<case>


@dataclass(frozen=True)
class EvalCase:
    """A run of an eval case (docs/evals.md): the recipe as of the suite's commit (not the
    catalogue's good version), a slot and results folder of its own, so it neither blocks nor
    is blocked by the recipe's ordinary runs, and for a `workdir:` recipe the working copy made
    from the case's files/ (`copy`). `label` is said on the run's page."""

    source: RecipeSource
    slot: str
    output_dir: str
    copy: CopySource | None
    label: str


FORK_SLOT = "fork/"  # the slots of forks: fork/<target>/<token>, so a running parent goes on beside them


@dataclass(frozen=True)
class ForkStart:
    """A fork of `parent` (docs/forks.md), made by runs.forks.run_fork: the parent's recipe
    version (`source`), a slot and results folder of its own, and for a coding run the pass whose
    restorable point its copy is made from (`point`, None: the parent's start commit, `copy`).
    `restore` fills the new run's results folder before any worker can take it."""

    parent: Run
    from_pass: int
    redo: bool
    edits: dict
    source: RecipeSource
    slot: str
    output_dir: str
    point: object | None = None  # a WorkspacePass
    copy: CopySource | None = None
    restore: object | None = None  # callable(run, folder) -> None


def run_start(
    *,
    kind: str,
    name_or_path: str,
    args: list[str],
    user=None,
    headless: bool = True,
    overrides: dict | None = None,
    provider: str | None = None,
    dry_run: bool = False,
    resumed_from: Run | None = None,
    schedule: str = "",
    base: str | None = None,
    workdir: str | None = None,
    catalogue_only: bool = False,
    eval_case: EvalCase | None = None,
    trace_parent: dict | None = None,
    fork: ForkStart | None = None,
    source: RecipeSource | None = None,
    chain_parent: Run | None = None,
) -> Run | DryRun:
    """Arm and queue a run, or refuse with a clear message before anything is spent. `base`:
    the branch, tag or commit a coding run's copy starts from (`--base`; else the recipe's
    `base:`, else the head of the recipes branch). `workdir` (`--workdir`) puts a coding run's
    agent in another folder of the repository. `catalogue_only`: started from the web, the API
    or MCP (see recipe_source). `eval_case`: the run of an eval case (see EvalCase).
    `trace_parent`: the stored trace context the run's trace hangs under (an eval suite's:
    docs/tracing.md). `fork`: a fork of a run (see ForkStart). `source`: the recipe a caller built
    (an agent package's, runs.packages). `chain_parent`: the fulfilled run whose `on_success` starts
    this one (runs.on_success, docs/chains.md)."""
    if eval_case is not None:
        source = eval_case.source
        source.notes.append(eval_case.label)
    elif fork is not None:
        source = fork.source
    elif source is None:
        source = recipe_source(kind=kind, name_or_path=name_or_path, catalogue_only=catalogue_only)
    overrides = {**(overrides or {}), **({WORKDIR_OVERRIDE: workdir} if workdir is not None else {})}
    try:
        spec, plan = arm(source.text, path=source.path, kind=kind, overrides=overrides)
        output_dir = resolve_output_dir(spec, settings.RYSH_RESULTS_DIR)
        plan, policy = policy_for_run(plan)  # a policy that does not parse stops every run (docs/policy.md)
    except (RecipeError, OverrideError, PolicyBroken) as exc:
        raise RunRefused(str(exc)) from None
    source.notes += policy.notes  # which rule shaped the run: the plan lines and its events say
    # what `check` refuses with the database (MCP servers, channels, the base, the workdir), of the
    # recipe as written: a run's own --workdir or --base is checked where the copy is chosen
    extra = extra_issues(parse_recipe(source.text, path=source.path, kind=kind))
    if eval_case is not None or fork is not None:  # its copy is its own (files/, a point), not the repository's
        extra = [issue for issue in extra if issue.field not in ("workdir", "base")]
    if extra:
        raise RunRefused("; ".join(str(issue) for issue in extra))
    if WORKDIR_OVERRIDE in overrides:
        overrides[WORKDIR_OVERRIDE] = spec.workdir  # as normalised: `pkg/` and `pkg` are one slot
    slot, output_dir = _slot_and_folder(spec, args, overrides, output_dir)
    if eval_case is not None:
        slot, output_dir = eval_case.slot, Path(eval_case.output_dir)
    if fork is not None:
        slot, output_dir = fork.slot, Path(fork.output_dir)
    owner = (
        None
        if eval_case or fork
        else results_folder_owner(kind=spec.kind, name=spec.name, output_dir=spec.output_dir or "")
    )
    if owner is not None:
        raise RunRefused(
            f"{spec.target}: output_dir {spec.output_dir!r} is the results folder of {owner.target} "
            f"(it claimed {owner.good.spec.get('output_dir')!r} first); give this recipe a folder of its own "
            f"({Kind(spec.kind).folder}/{spec.name}/… or a new folder outside {FOLDER_WORDS})"
        )
    if len(args) < len(spec.args):
        missing = ", ".join(spec.args[len(args) :])
        raise RunRefused(f"{spec.target} needs {len(spec.args)} argument(s): {' '.join(spec.args)}; missing: {missing}")
    if spec.kind == Kind.WEB:
        try:
            start_page(spec, args, str(output_dir))
        except ValueError as exc:
            raise RunRefused(f"{spec.target}: {exc}") from None
    if spec.kind == Kind.WEB and settings.RYSH_CHROMIUM and not Path(settings.RYSH_CHROMIUM).exists():
        raise RunRefused(
            f"RYSH_CHROMIUM is {settings.RYSH_CHROMIUM}, which does not exist; install "
            "Chromium (make install) or unset RYSH_CHROMIUM to use Playwright's own"
        )
    if eval_case is not None and spec.workdir is not None:
        _refuse_without_sandbox(spec.target)
        copy_source = eval_case.copy
    elif fork is not None:
        if spec.workdir is not None:
            _refuse_without_sandbox(spec.target)
        copy_source = fork.copy
    else:
        copy_source = _copy_source(spec, source, base, resumed_from)
    executor, judge = models_for(spec)
    if dry_run:
        lines = _dry_run_lines(spec, plan, source, args, str(output_dir), executor, judge, user=user, copy=copy_source)
        return DryRun(lines)
    if chain_parent is None and eval_case is None and fork is None:  # the chain's first run: all of it must fit
        user_id = user.pk if getattr(user, "is_authenticated", False) else None
        if refusal := chain_quota_refusal(spec, user_id=user_id):
            raise RunRefused(refusal)
    try:
        chosen = choose_provider(provider, target=spec.target, script=source.script)
        if chosen == "anthropic":
            preflight_anthropic()
            leg_models = [executor] + ([wrapup_for(spec, executor)] if plan.split.takeover else [])
            preflight_models(leg_models + ([judge] if plan.judge_tokens else []))
    except ProviderError as exc:
        raise RunRefused(str(exc)) from None
    if chosen == "scripted":
        # Never priced or labelled as Claude: the scripted model is its own thing.
        executor = judge = SCRIPTED_MODEL
    return _create_run(
        spec=spec,
        plan=plan,
        source=source,
        args=args,
        user=user,
        headless=headless,
        overrides=overrides,
        slot=slot,
        provider=chosen,
        executor=executor,
        judge=judge,
        output_dir=output_dir,
        resumed_from=resumed_from,
        schedule=schedule,
        copy_source=copy_source,
        trace_context=tracing.child_context(trace_parent),
        fork=fork,
        policy=policy,
        chain_parent=chain_parent,
    )


def _copy_source(spec, source: RecipeSource, base: str | None, resumed_from: Run | None) -> CopySource | None:
    """Where a coding run's copy starts, resolved now (docs/coding-loops.md): None for a run
    without workdir, or a resume that carries its predecessor's copy over."""
    if spec.workdir is None:
        if base:
            raise RunRefused(f"{spec.target}: --base applies to a coding recipe (workdir:); this one has none")
        return None
    _refuse_without_sandbox(spec.target)
    if workspace_carries(resumed_from):
        return None
    try:
        return workspace_source(
            target=spec.target,
            recipe_path=source.path,
            workdir=spec.workdir,
            base=base or spec.base,
            catalogue=source.version is not None,
            asked="--base" if base else f"base (line {spec.base_line})",
        )
    except WorkspaceRefused as exc:
        raise RunRefused(str(exc)) from None


def _copy_origin(source: RecipeSource, copy: CopySource | None) -> str:
    """Which commit a coding run's copy starts from, the recipe version that runs beside it."""
    if copy is None:
        return ""
    version = f"recipe version {source.version.commit_sha[:8]}" if source.version else f"recipe file {source.path}"
    note = f" ({copy.note})" if copy.note else ""
    return f" from {copy.ref} at {copy.commit[:8]} of {copy.shown} ({version}){note}"


def _slot_and_folder(spec, args: list[str], overrides: dict, output_dir: Path) -> tuple[str, Path]:
    """The run's slot, and its results folder: a coding run's is its slot's own, under the
    recipe's, so runs side by side never read or snapshot each other's results."""
    coding, override = spec.workdir is not None, overrides.get(WORKDIR_OVERRIDE)
    slot = run_slot(spec.target, side_by_side=coding, args=args, workdir=override)
    return slot, (output_dir / slot_folder(args, override) if coding else output_dir)


def _refuse_without_sandbox(target: str) -> None:
    """No sandbox, no workdir run, unless an admin turned it off for everyone. The workers run
    the commands, and they may be other machines than this one (docs/coding-loops.md): a worker
    seen lately that can sandbox is enough (a run waits for such a worker); workers seen lately
    that all cannot refuse it; with none seen, this machine's own bubblewrap decides."""
    config = sandbox_config()
    if not config.enabled:
        return
    seen = worker_sandboxes()
    if seen & {"ok", "off"}:
        return
    if seen == {"unavailable"}:
        raise RunRefused(
            f"{target}: no worker can sandbox: every worker seen in the last {settings.RYSH_READY_WORKER_SECONDS}s "
            "has no working bubblewrap (install it there: apt-get install bubblewrap); a workdir run never runs "
            "unsandboxed unless an admin sets RYSH_SANDBOX=off for the installation"
        )
    problem = sandbox_problem(config)
    if problem:
        raise RunRefused(
            f"{target}: the sandbox cannot start on this machine ({problem}); a workdir run never runs "
            "unsandboxed unless an admin sets RYSH_SANDBOX=off for the installation"
        )


def _create_run(
    *,
    spec,
    plan,
    source,
    args,
    user,
    headless,
    overrides,
    slot,
    provider,
    executor,
    judge,
    output_dir,
    resumed_from,
    schedule,
    copy_source,
    trace_context=None,
    fork: ForkStart | None = None,
    policy=None,
    chain_parent: Run | None = None,
) -> Run:
    if copy_source is not None and copy_source.note:
        source.notes.append(copy_source.note)
    try:
        with transaction.atomic():
            run = Run.objects.create(
                recipe=source.recipe,
                recipe_version=source.version,
                **_package_label(source),
                kind=spec.kind,
                name=spec.name,
                target=spec.target,
                slot=slot,
                recipe_path=source.path,
                recipe_text=source.text,
                args=list(args),
                overrides=overrides,
                plan=plan_snapshot(plan),
                policy=policy.to_json() if policy is not None else {},
                user=user,
                charged_to=user,  # their user quota counts its calls (a continue or grant moves it)
                headless=headless,
                provider=provider,
                executor_model=executor,
                judge_model=judge,
                output_dir=str(output_dir),
                script_path=str(source.script or ""),
                resumed_from=resumed_from,
                trace_context=trace_context or {},
                chain_parent=chain_parent,
                chain_depth=chain_parent.chain_depth + 1 if chain_parent is not None else 0,
                **_lineage(fork),
            )
            if spec.workdir is not None:
                forked = fork.point if fork is not None else None
                workspace_arm(
                    run=run, workdir=spec.workdir, source=copy_source, sandboxed=sandbox_config().enabled, forked=forked
                )
    except WorkspaceRefused as exc:
        raise RunRefused(str(exc)) from None
    except IntegrityError:
        raise slot_taken(spec.target, slot) from None
    output_dir.mkdir(parents=True, exist_ok=True)
    if fork is not None and fork.restore is not None:  # before any worker can take it
        fork.restore(run, output_dir)
    for note in source.notes:
        events.record(run, EventKind.NOTE, note)
    if chain_parent is not None and resumed_from is None:
        events.record(run, EventKind.NOTE, f"started by the on_success of {chain_parent.target} #{chain_parent.pk}")
    label = "the offline scripted model (not Claude)" if provider == "scripted" else executor
    events.record(run, EventKind.QUEUED, f"queued on {label}", provider=provider)
    if fork is not None:  # recorded once, with what it forks and the edits it carries
        detail = {"parent": fork.parent.pk, "pass": fork.from_pass, "redo": fork.redo, "edits": fork.edits}
        audit_record(actor=user, action="run.fork", target=run, detail={"args": list(args), **detail})
    elif resumed_from is None:  # a resume is recorded once, as run.resume, by run_resume
        if schedule:  # a schedule started it, for its owner: the owner did not act
            detail = {"args": list(args), "schedule": schedule, "for": user.get_username() if user else None}
            audit_record(action="run.start", target=run, detail=detail)
        elif chain_parent is not None:  # the first run's success started it: nobody acted now
            detail = {
                "args": list(args),
                "on_success_of": chain_parent.pk,
                "for": user.get_username() if user else None,
            }
            audit_record(action="run.start", target=run, detail=detail)
        else:
            audit_record(actor=user, action="run.start", target=run, detail={"args": list(args)})
    _enqueue_on_commit(run.pk)
    return run


def _package_label(source: RecipeSource) -> dict:
    if source.package is None:
        return {}
    return {"package_version": source.package, "package": source.package.label}


def _lineage(fork: ForkStart | None) -> dict:
    if fork is None:
        return {}
    return {"forked_from": fork.parent, "fork_pass": fork.from_pass, "fork_redo": fork.redo, "fork_edits": fork.edits}


def _start_page_said(spec, args, output_dir) -> str:
    url = start_page(spec, args, output_dir)  # the start refused what is not a web address
    return site_url(url) if url else "(blank)"


def _dry_run_lines(spec, plan, source, args, output_dir, executor, judge, *, user=None, copy=None) -> list[str]:
    lines = [f"dry run: {spec.target}  (nothing is changed)"]
    lines += [f"  note: {n}" for n in source.notes]
    prompt = first_message(spec, args, output_dir, workdir=previewed_workdir(spec))
    lines += ["", "prompt:", *("  " + line for line in prompt.splitlines()), ""]
    lines += plan_lines(spec, plan, executor=executor, judge=judge)
    lines += [f"model: {line}" for line in model_notes(spec)]
    # the person who would start it: their own quota counts too (the CLI has no user)
    user_id = user.pk if getattr(user, "is_authenticated", False) else None
    worst = WorstCase.of(plan, executor=executor, judge=judge)
    lines += [f"quota: {line}" for line in quota_lines(target=spec.target, user_id=user_id, worst=worst)]
    lines += [f"warning: {line}" for line in price_warnings(worst.models)]
    lines += chain_quota_lines(spec, user_id=user_id)
    if spec.kind == Kind.WEB:
        lines += [
            f"browser: profile {spec.web_profile}, start page {_start_page_said(spec, args, output_dir)}, "
            f"reads pages as {spec.web_read}"
            + (f", only {', '.join(spec.allowed_domains)}" if spec.allowed_domains else "")
            + (", video kept" if spec.record else "")
        ]
        if spec.approve:
            lines.append(f"approval needed for: {', '.join(spec.approve)}")
    if spec.workdir is not None:
        lines.append(
            f"working copy: its own copy of the repository{_copy_origin(source, copy)}, working in {spec.workdir}; "
            "commands "
            + ("in the bubblewrap sandbox" if sandbox_config().enabled else "UNSANDBOXED (RYSH_SANDBOX=off)")
        )
        if spec.setup:
            lines.append(setup_line(spec.setup))
        if spec.approve:
            lines.append(f"approval needed for: {', '.join(spec.approve)}")
    lines += [f"schedule: {spec.schedule or 'none'}", f"results: {output_dir}"]
    return lines


def _enqueue_on_commit(run_id: int) -> None:
    transaction.on_commit(lambda: enqueue_run(run_id))


def enqueue_run(run_id: int) -> None:
    """Queue a run for a worker, by the entry point's dotted path (services never import the
    worker module: it imports them)."""
    async_task(EXECUTE_FUNC, run_id, task_name=f"run-{run_id}", group="runs")


def active_run(slot: str) -> Run | None:
    """The run holding a slot (runs.slots), if any."""
    return Run.objects.filter(BLOCKING_RUN, slot=slot).first()


def describe(run: Run | None) -> str:
    if run is None:
        return "(it ended meanwhile; try again)"
    return (
        f"run #{run.pk} ({run.state_label}, pass {run.pass_number}/{run.plan.get('passes', 1)}; "
        f"`auto {run.kind} status {run.name}` shows it)"
    )


def slot_taken(target: str, slot: str) -> RunRefused:
    """The refusal of a run whose slot another holds, naming (and, on a page, linking) that run."""
    holder = active_run(slot)
    which = "" if slot == target else " with these arguments"
    return RunRefused(
        f"{target} already has an active run{which}: {describe(holder)}; stop or cancel it first", holder=holder
    )


# -- controls --------------------------------------------------------------------------------


def run_stop(*, run: Run, user=None) -> str:
    """Graceful: the pass in flight finishes, is not judged, and nothing iterates."""
    if "stop" not in allowed_controls(run):
        raise RunRefused(f"run #{run.pk} has already finished ({run.cause})")
    if run.state == RunState.PAUSED or run.state == RunState.QUEUED:
        # Nothing is in flight: a paused or queued run stops at once.
        if Run.objects.filter(pk=run.pk, state=run.state).update(control=Control.STOP) == 1:
            with transaction.atomic():
                finish_run(run, "stopped by user")
            audit_record(actor=user, action="run.stop", target=run)
            return f"run #{run.pk} stopped"
    Run.objects.filter(pk=run.pk, state__in=ACTIVE_STATES).update(control=Control.STOP)
    events.record(run, EventKind.CONTROL, "stop requested: the pass in flight finishes, then the run ends")
    audit_record(actor=user, action="run.stop", target=run)
    return f"run #{run.pk}: stop requested; the pass in flight finishes, is not judged, and the run ends"


def run_cancel(*, run: Run, user=None) -> str:
    """Interrupt now; the conversation is kept as a checkpoint."""
    nothing = f"run #{run.pk} is not running ({run.state_label}); nothing to cancel"
    if "cancel" not in allowed_controls(run):
        raise RunRefused(nothing)
    if run.state == RunState.QUEUED:
        cancelled = PauseReason.CANCELLED
        if (
            Run.objects.filter(pk=run.pk, state=RunState.QUEUED).update(state=RunState.PAUSED, pause_reason=cancelled)
            != 1
        ):
            raise RunRefused(nothing)  # a worker took it meanwhile: look again
        run.refresh_from_db()
        events.record(run, EventKind.PAUSED, f"paused({cancelled}) before it started", reason=cancelled)
        run_paused.send(sender=Run, run=run, reason=cancelled)  # notifications listen
        audit_record(actor=user, action="run.cancel", target=run)
        return f"run #{run.pk} cancelled before it started; state preserved"
    Run.objects.filter(pk=run.pk, state__in=WORKING_STATES).exclude(control=Control.STOP).update(control=Control.CANCEL)
    events.record(run, EventKind.CONTROL, "cancel requested: interrupting now; state preserved")
    audit_record(actor=user, action="run.cancel", target=run)
    return f"run #{run.pk}: cancel requested; it pauses with its conversation kept (state preserved)"


def run_land(*, run: Run, user=None) -> str:
    """Hand the wheel to the wrap-up prompt now, with the wrap-up share."""
    if "land" not in allowed_controls(run):
        raise RunRefused(_nothing_to_land(run))
    if Run.objects.filter(pk=run.pk, state=RunState.RUNNING, control="").update(control=Control.LAND) != 1:
        raise RunRefused(f"run #{run.pk} already has a request pending")
    events.record(run, EventKind.CONTROL, "land now requested: the wrap-up prompt takes the wheel")
    audit_record(actor=user, action="run.land", target=run)
    return f"run #{run.pk}: landing — the wrap-up prompt takes the wheel after this step"


def run_continue(*, run: Run, user=None) -> str:
    """A paused pass picks up from its checkpoint; a cancel or lost worker re-arms the leg."""
    if "continue" not in allowed_controls(run):
        raise RunRefused(_nothing_to_continue(run))
    reason = run.pause_reason
    gone = _copy_gone(run)
    if gone:
        raise RunRefused(gone)
    try:
        with transaction.atomic():
            if (
                Run.objects.filter(pk=run.pk, state=RunState.PAUSED).update(
                    state=RunState.QUEUED, pause_reason="", control="", **_charge(user)
                )
                != 1
            ):
                raise RunRefused(f"run #{run.pk} changed meanwhile; look again")
            if reason != PauseReason.STEP_CAP and not PauseReason.is_quota(reason):
                # (a quota pause waited before a call: the leg goes on with what it had)
                # budget re-armed: the current leg gets its allotment afresh (the job's outer
                # ceilings still hold, so the worst case does too)
                Pass.objects.filter(run=run, ended_at__isnull=True).update(leg_steps=0, leg_tokens=0, leg_seconds=0)
    except IntegrityError:
        raise slot_taken(run.target, run.slot) from None
    run.refresh_from_db()
    events.record(run, EventKind.CONTINUED, f"continue from paused({reason})" + _charged_note(user))
    audit_record(actor=user, action="run.continue", target=run, detail={"paused": reason, **_charged_detail(user)})
    _enqueue_on_commit(run.pk)
    return f"run #{run.pk} continues from its checkpoint (was paused({reason}))"


def _nothing_to_land(run: Run) -> str:
    if run.state != RunState.RUNNING:
        return f"run #{run.pk} is not running ({run.state_label}); nothing to land"
    if run.phase != Phase.TASK:
        return f"run #{run.pk} is in {run.phase or run.state_label}; land now applies to a task leg"
    return f"run #{run.pk} already has a request pending"


def _charge(user) -> dict:
    """A person who continues or grants a run pays for what it spends from then on: their user
    quota counts its calls, not the starter's. Without a person (an automatic continue after
    a quota wait, the CLI) whoever was charged stays so."""
    return {"charged_to": user} if getattr(user, "is_authenticated", False) else {}


def _charged_note(user) -> str:
    return f"; {user.get_username()}'s quota counts its calls from now on" if _charge(user) else ""


def _charged_detail(user) -> dict:
    return {"charged_to": user.get_username()} if _charge(user) else {}


def _copy_gone(run: Run) -> str | None:
    """Why a workdir run cannot go on from its checkpoint: its copy went to a resume or away."""
    state = run.workspace.state if hasattr(run, "workspace") else None
    if state == WorkspaceState.HANDED_OVER:
        return (
            f"run #{run.pk} cannot continue: its working copy went to run #{run.workspace.carried_to.run_id} "
            "(a resume); continue that one"
        )
    if state in (WorkspaceState.DISCARDED, WorkspaceState.REMOVED):
        return f"run #{run.pk} cannot continue: its working copy was {state}; resume starts afresh"
    return None


def _nothing_to_continue(run: Run) -> str:
    if run.state == RunState.FINISHED:
        return (
            f"run #{run.pk} has nothing to continue: it finished ({run.cause}). "
            "Use resume to start a fresh run seeded with its latest result."
        )
    return f"run #{run.pk} has nothing to continue: it is {run.state_label}"


def run_resume(*, run: Run, user=None, headless: bool | None = None, provider: str | None = None) -> Run:
    """A fresh run with a fresh budget, seeded with the latest result file; it names `run`."""
    new = run_start(
        kind=run.kind,
        name_or_path=run.recipe_path if not run.recipe_id else run.name,
        args=list(run.args),
        user=user,
        headless=run.headless if headless is None else headless,
        overrides=run.overrides,
        provider=provider or run.provider,
        resumed_from=run,
        chain_parent=run.chain_parent,  # a resumed link of a chain is still that link (docs/chains.md)
    )
    audit_record(actor=user, action="run.resume", target=new, detail={"resumes": run.pk})
    return new


def run_grant(*, run: Run, extra: PlanGrant, user=None) -> str:
    """More passes, outer tokens or outer time for a run that ended at an outer ceiling; it goes
    on as the same run, its next pass seeded as usual (docs/spend.md). Bounded by
    RYSH_GRANT_MAX_PERCENT of the recipe's own outer ceilings, all grants together."""
    if run.state != RunState.FINISHED:  # (a run that ended elsewhere than at an outer ceiling: grant_refusal)
        raise RunRefused(f"run #{run.pk} has not ended ({run.state_label}); a grant applies to a run that ended")
    if run.slot.startswith(EVAL_SLOT):  # more for it would be spent past its suite's ceiling
        raise RunRefused(f"run #{run.pk} is an eval case's run: its suite's ceiling holds it; resume it instead")
    pruned = run_pruned(run).get("steps")
    if pruned:  # going on needs the conversation (a pass cut short goes on where it stopped)
        raise RunRefused(
            f"run #{run.pk}: its steps and conversation were pruned on {pruned:%Y-%m-%d} (retention); "
            "resume it instead: a new run starts from its results"
        )
    try:
        _spec, base = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=run.overrides)
    except (RecipeError, OverrideError) as exc:
        raise RunRefused(f"run #{run.pk} cannot be re-armed: {exc}") from None
    already = run.granted()
    plan = base.granted(already)
    why = grant_refusal(plan, base, run.cause, already, extra, settings.RYSH_GRANT_MAX_PERCENT / 100)
    if why:
        raise RunRefused(f"run #{run.pk}: {why}")
    granted, policy = plan.granted(extra), Merged.from_json(run.policy)
    if extra.tokens and policy.run is not None and granted.outer_tokens > policy.run.tokens:
        raise RunRefused(
            f"run #{run.pk}: the policy's run ceiling ({policy.run.where}) holds it at "
            f"{format_tokens(policy.run.tokens)} in all; a grant cannot lift it (docs/policy.md)"
        )
    granted, _ = lower_plan(granted, policy)  # the run's plan as the engine re-arms it: policy's ceilings
    cause = run.cause
    try:
        with transaction.atomic():
            claimed = Run.objects.filter(pk=run.pk, state=RunState.FINISHED, cause=cause).update(
                state=RunState.QUEUED,
                cause="",
                control="",
                phase="",
                ended_at=None,
                plan=plan_snapshot(granted),
                **_charge(user),
            )
            if claimed != 1:
                raise RunRefused(f"run #{run.pk} changed meanwhile; look again")
            Grant.objects.create(
                run=run,
                granted_by=user if getattr(user, "is_authenticated", False) else None,
                passes=extra.passes,
                tokens=extra.tokens,
                seconds=extra.seconds,
                cause_before=cause,
            )
    except IntegrityError:
        raise slot_taken(run.target, run.slot) from None
    run.refresh_from_db()
    who = getattr(user, "username", "") or "the CLI"
    events.record(
        run,
        EventKind.GRANTED,
        f"granted {extra.describe()} by {who} after '{cause}'; now {granted.passes} passes, "
        f"outer total {format_tokens(granted.outer_tokens) if granted.outer_tokens else 'none'}, "
        f"outer time {format_duration(granted.outer_seconds) if granted.outer_seconds else 'none'}"
        + _charged_note(user),
    )
    audit_record(
        actor=user,
        action="run.grant",
        target=run,
        detail={"extra": extra.describe(), "after": cause, **_charged_detail(user)},
    )
    _enqueue_on_commit(run.pk)
    return f"run #{run.pk} granted {extra.describe()}; it goes on as the same run (was: {cause})"


# -- approvals ----------------------------------------------------------------------------------


def approval_answer(*, approval: Approval, user, approved: bool, reason: str = "") -> str:
    """A person answers a pending approval; the engine, polling, goes on at once."""
    if approval.state != ApprovalState.PENDING:
        raise RunRefused(f"approval #{approval.pk} was already answered ({approval.state})")
    state = ApprovalState.APPROVED if approved else ApprovalState.REJECTED
    if not approvals.settle(approval, state, reason.strip(), user=user):
        approval.refresh_from_db()
        raise RunRefused(f"approval #{approval.pk} was answered meanwhile ({approval.state})")
    verb = "approved" if approved else "rejected"
    audit_record(
        actor=user,
        action="approval.approve" if approved else "approval.reject",
        target=approval.run,
        detail={"approval": approval.pk, "call": approval.action_text, "reason": reason.strip()},
    )
    return f"run #{approval.run_id}: {approval.action_text} {verb}" + (f" ({reason.strip()})" if reason.strip() else "")


def pending_approval(run: Run) -> Approval:
    approval = Approval.objects.filter(run=run, state=ApprovalState.PENDING).first()
    if approval is None:
        raise RunRefused(f"run #{run.pk} has no action waiting for approval ({run.state_label})")
    return approval


# -- the sweeper: runs whose worker died -------------------------------------------------------


def runs_sweep_lost(*, now=None) -> list[str]:
    """Runs still 'running' whose heartbeat stopped: settle what was in flight, then queue
    them again from their checkpoint (up to RYSH_WORKER_LOST_RETRIES times) or pause them
    as `paused(worker lost)` for a person to continue."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.RYSH_WORKER_LOST_SECONDS)
    said = []
    stale = Run.objects.filter(state__in=WORKING_STATES).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)
    )
    for run in stale:
        # running -> paused(worker lost) once: two sweepers cannot both take it
        if (
            Run.objects.filter(pk=run.pk, state=run.state, heartbeat_at=run.heartbeat_at).update(
                state=RunState.PAUSED, pause_reason=PauseReason.WORKER_LOST, lost_count=run.lost_count + 1
            )
            != 1
        ):
            continue
        for approval in Approval.objects.filter(run=run, state=ApprovalState.PENDING):
            approvals.settle(approval, ApprovalState.CANCELLED, "the worker was lost while it waited")
        run.refresh_from_db()
        settled = settle_pending_steps(run)
        if run.control == Control.STOP:
            finish_run(run, "stopped by user")
            said.append(f"run #{run.pk}: worker lost; it had been asked to stop, so it ended")
            continue
        events.record(
            run,
            EventKind.PAUSED,
            f"paused(worker lost); {settled} call(s) in flight counted in full",
            reason=PauseReason.WORKER_LOST,
        )
        if run.lost_count <= settings.RYSH_WORKER_LOST_RETRIES:
            if (
                Run.objects.filter(pk=run.pk, state=RunState.PAUSED).update(
                    state=RunState.QUEUED, pause_reason="", control=""
                )
                == 1
            ):
                events.record(
                    run,
                    EventKind.CONTINUED,
                    f"continued automatically after a lost worker "
                    f"({run.lost_count}/{settings.RYSH_WORKER_LOST_RETRIES})",
                )
                _enqueue_on_commit(run.pk)
                said.append(f"run #{run.pk}: worker lost; continued from its checkpoint")
        else:
            write_report(run)
            run_paused.send(sender=Run, run=run, reason=PauseReason.WORKER_LOST)  # notifications listen
            said.append(f"run #{run.pk}: worker lost {run.lost_count} times; paused for a person")
    return said
