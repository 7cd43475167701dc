"""A suite's plan (docs/evals.md, "The suite's ceiling"): the recipe and its cases read at one
commit, each case armed as its run would be, its worst case, and the ceiling (their sum),
shown before anything is spent."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings

from budgets.plan import Plan
from budgets.prices import format_money
from budgets.units import format_tokens
from catalogue.models import Recipe
from catalogue.packages import MANIFEST_NAME, agent_recipe, read_package
from catalogue.plan_report import models_for, worst_case_money
from catalogue.recipe import RecipeError
from catalogue.repo import RepoError, open_repo, reopen_location
from catalogue.spec import RecipeSpec
from evals import sources
from evals.format import Case, CaseError, check_args
from evals.rubric import rubric_worst
from evals.shapes import PlannedCase, SuitePlan, SuiteRefused
from runs.arming import TASK_OVERRIDE, UNTIL_OVERRIDE, WORKDIR_OVERRIDE, OverrideError, arm
from runs.ledger import COST_PLACES
from spend.prices import micros_per_token

TASK_ARG = "task"  # a recipe whose argument is named so (the built-in agent) gets the case's task there


@dataclass(frozen=True)
class Read:
    """What a suite runs: the recipe's text and where it was read, and its cases."""

    kind: str
    path: str  # the recipe's path (repository-relative; a PATH suite's is a name beside its folder)
    text: str
    commit_sha: str
    cases: list[Case]
    recipe: Recipe | None = None
    folder: str = ""  # a PATH suite's folder on disk


def case_overrides(case: Case, spec: RecipeSpec) -> dict:
    """How a case's run is armed beyond the recipe: its task (after the prompt, unless the recipe
    takes it as its `task` argument), its goal, and a copy made from its files/ worked at the top."""
    overrides: dict = {}
    if TASK_ARG not in spec.args or TASK_ARG in case.args:
        overrides[TASK_OVERRIDE] = case.task
    if case.until:
        overrides[UNTIL_OVERRIDE] = case.until
    if spec.workdir is not None:
        overrides[WORKDIR_OVERRIDE] = "."
    return overrides


def case_args(case: Case, spec: RecipeSpec) -> list[str]:
    """The case's `args:` mapped onto the recipe's positional placeholders."""
    return [case.task if name == TASK_ARG and name not in case.args else case.args.get(name, "") for name in spec.args]


def arm_case(read: Read, case: Case) -> tuple[RecipeSpec, Plan, dict]:
    """The recipe armed for `case` (RecipeError / OverrideError when it cannot be)."""
    spec, _ = arm(read.text, path=read.path, kind=read.kind, overrides={})
    overrides = case_overrides(case, spec)
    spec, plan = arm(read.text, path=read.path, kind=read.kind, overrides=overrides)
    return spec, plan, overrides


def plan_of(read: Read, *, target: str, side: str, only: str | None) -> SuitePlan:
    cases = [c for c in read.cases if only is None or c.name == only]
    if only is not None and not cases:
        names = ", ".join(c.name for c in read.cases) or "none"
        raise SuiteRefused(f"{target} has no case {only!r} (its cases: {names})")
    plan = SuitePlan(target=target, side=side, commit_sha=read.commit_sha, recipe_text=read.text)
    for case in cases:
        planned = _planned(read, case)
        if isinstance(planned, Case):
            plan.broken.append(planned)
        else:
            plan.cases.append(planned)
    plan.budget_tokens = sum(p.worst_tokens for p in plan.cases)
    plan.money = _sum_money([p.money for p in plan.cases])
    plan.lines = plan_lines(plan)
    return plan


def _planned(read: Read, case: Case) -> PlannedCase | Case:
    if case.broken:
        return case
    try:
        spec, run_plan, _ = arm_case(read, case)
    except (RecipeError, OverrideError) as exc:
        return dataclasses.replace(case, errors=(CaseError(read.path, 0, "", str(exc)),))
    placeholders = [n for n in spec.args if not (n == TASK_ARG and TASK_ARG not in case.args)]
    errors = check_args(case, placeholders, recipe=spec.target)
    if errors:
        return dataclasses.replace(case, errors=tuple(errors))
    executor, judge = models_for(spec)
    rubric = rubric_worst(case.rubric)
    run_money = worst_case_money(run_plan, executor=executor, judge=judge)
    rate = micros_per_token(judge, rubric) if rubric else Decimal(0)
    rubric_money = None if rate is None else (Decimal(rubric) * rate / 1_000_000).quantize(COST_PLACES)
    return PlannedCase(
        case=case,
        worst_tokens=run_plan.worst_tokens + rubric,
        run_tokens=run_plan.worst_tokens,
        rubric_tokens=rubric,
        money=_sum_money([run_money, rubric_money]),
    )


def _sum_money(amounts) -> Decimal | None:
    return None if any(a is None for a in amounts) else sum(amounts, Decimal(0))


def plan_lines(plan: SuitePlan) -> list[str]:
    where = f" at {plan.commit_sha[:8]}" if plan.commit_sha else ""
    lines = [f"suite of {plan.target} ({plan.side}{where}): {len(plan.cases)} case(s) to run"]
    for p in plan.cases:
        rubric = f" (rubric call {p.rubric_tokens:,})" if p.rubric_tokens else ""
        lines.append(
            f"  {p.case.name}: worst case {p.worst_tokens:,} tokens ({format_tokens(p.worst_tokens)}){rubric}, "
            f"{format_money(p.money)}"
        )
    for case in plan.broken:
        lines.append(f"  {case.name}: BROKEN, not run")
        lines += [f"    {error}" for error in case.errors]
    lines.append(
        f"ceiling: {plan.budget_tokens:,} tokens ({format_tokens(plan.budget_tokens)}), {format_money(plan.money)}"
        " — the suite never counts more"
    )
    return lines


# -- reading the recipe and its cases --------------------------------------------------------------


def read_target(target: str, *, side: str, change=None) -> Read:
    """The recipe `kind/name` and its cases at the head of the tracked branch ("main") or of
    `change`'s review branch ("change")."""
    kind, _, name = target.partition("/")
    recipe = Recipe.objects.filter(kind=kind, name=name).first()
    if side == "change":
        if change is None:
            raise SuiteRefused("a suite on the change side needs the change request")
        git = open_repo(reopen_location(change.repo, settings.RYSH_RECIPES_REPO))
        sha = change.head_sha
        path = change_recipe_path(change)
        if not sha:
            raise SuiteRefused(f"change request #{change.pk} has no review branch to read")
    else:
        if recipe is None:
            raise SuiteRefused(f"no recipe {target} in the catalogue")
        git = open_repo(settings.RYSH_RECIPES_REPO)
        try:
            git.refresh(settings.RYSH_RECIPES_BRANCH)
            sha = git.head(settings.RYSH_RECIPES_BRANCH)
        except RepoError as exc:
            raise SuiteRefused(f"{target}: the recipes repository cannot be read: {exc}") from None
        path = recipe.path
    text = git.read_file(sha, path)
    if text is None:
        raise SuiteRefused(f"{target}: {path} does not exist at {sha[:8]}")
    return Read(kind=kind, path=path, text=text, commit_sha=sha, cases=cases_at(git, sha, path), recipe=recipe)


def change_recipe_path(change) -> str:
    """The recipe a change request is about: its file, or — a change to one of its cases' files
    (`<recipe folder>/<name>/evals/<case>/…`) — the recipe beside that evals/ folder."""
    path = change.new_path or change.path
    head, found, _ = path.partition("/evals/")
    return f"{head}.md" if found else path


def cases_at(git, sha: str, recipe_path: str) -> list[Case]:
    """The cases beside a recipe in the repository at a commit (only their blobs are read)."""
    try:
        return sources.cases_at(git, sha, recipe_path)
    except RepoError as exc:
        raise SuiteRefused(f"{recipe_path}: its cases cannot be read at {sha[:8]}: {exc}") from None


def _agent_of(folder: Path) -> tuple[str, str] | None:
    """An agent package's folder runs its cases with the agent's own instructions, model and
    tools' working copy (docs/packages.md); None for any other folder (the built-in agent)."""
    manifest = folder / MANIFEST_NAME
    if not manifest.is_file():
        return None
    files = {str(p.relative_to(folder)).replace("\\", "/"): "" for p in folder.rglob("*") if p.is_file()}
    for inner in files:
        if not inner.startswith("evals/"):
            files[inner] = (folder / inner).read_text(encoding="utf-8", errors="replace")
    try:
        package = read_package(folder.name, files)
    except RecipeError as exc:
        raise SuiteRefused(f"{folder}: the package does not read:\n{exc}") from None
    if package.skill is None:
        return None
    built = agent_recipe(package, prompt=CASE_PROMPT)
    return built.kind, built.text


CASE_PROMPT = "Do the task of this eval case, below."


def read_path(path: str) -> Read:
    """A folder on disk in rysh's layout, run on the built-in coding agent."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise SuiteRefused(f"{path}: no such folder (expected a package holding evals/, an evals/ folder or a case)")
    try:
        cases = sources.cases_on_disk(str(folder))
    except sources.NotACasesFolder as exc:
        raise SuiteRefused(str(exc)) from None
    if not cases:
        raise SuiteRefused(f"{path}: no eval case there (expected <case>/task.md and <case>/expect.yaml under evals/)")
    package = folder.parent if folder.name == "evals" else folder
    if (folder / "task.md").exists() or (folder / "expect.yaml").exists():  # a single case's folder
        package = folder.parent.parent if folder.parent.name == "evals" else folder.parent
    name = re.sub(r"[^a-z0-9-]+", "-", package.name.lower()).strip("-")[:60] or "package"
    kind, text = _agent_of(package) or ("code", sources.BUILT_IN_AGENT)
    return Read(
        kind=kind,
        path=f"{package}/{name}.md",
        text=text,
        commit_sha="",
        cases=cases,
        folder=str(folder),
    )
