"""What `auto <kind> check` and the API's recipe check say of a recipe that parsed: the errors
that need the database or the models list, else the plan, the models, the worst case against
each quota that applies, and the warnings (docs/command-line.md). Shared by the command line
and the API, so neither front door imports the other."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import DatabaseError

from agents import models_api
from agents.browser.tools import BROWSER_TOOL_NAMES
from agents.coding_tools import BASH_TOOL, FILE_TOOL_NAMES
from agents.task_tools import HTTP_TOOL, RESULT_TOOLS
from budgets.plan import resolve
from catalogue.checks import extra_issues
from catalogue.plan_report import model_notes, models_for, plan_lines, wrapup_for
from catalogue.recipe import RecipeIssue, unfilled_placeholders
from catalogue.selectors import tokenizer_notes
from catalogue.spec import Kind
from policies.selectors import PolicyBroken, policy_for_run
from runs.chains import chain_quota_lines
from runs.outlook import WorstCase, price_warnings, quota_lines
from toolservers.checks import approve_warnings as mcp_approve_warnings


@dataclass
class CheckReport:
    """What `auto check` says of a recipe that parsed (the API's recipe show and check too):
    the errors that need the database or the models list, else the plan, the models, the worst
    case against each quota that applies, and the warnings."""

    errors: list[RecipeIssue]
    plan_lines: list[str] = field(default_factory=list)
    model_lines: list[str] = field(default_factory=list)
    quota_lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    worst: WorstCase | None = None


def check_report(spec, *, recipe_args, user_id: int | None) -> CheckReport:
    if extra := extra_issues(spec):  # what needs the database, e.g. notify: channels
        return CheckReport(errors=extra)
    plan, notes = resolve(spec.do, spec.loop_while), ()
    try:  # as a run would start now: under the policy's ceilings (docs/policy.md)
        plan, policy = policy_for_run(plan)
        notes = policy.notes
    except PolicyBroken as exc:
        return CheckReport(errors=[RecipeIssue("policy", None, "policy", str(exc))])
    except DatabaseError:  # `auto check` of a file on a checkout whose database is not set up: no policy synced
        pass
    executor, judge = models_for(spec)
    wrapup = spec.do.watch_model if plan.split.takeover is not None else None
    if issues := _model_issues(spec, executor, judge if plan.judge_tokens else None, wrapup):
        return CheckReport(errors=issues)
    worst = WorstCase.of(plan, executor=executor, judge=judge, wrapup=wrapup_for(spec, executor))
    return CheckReport(
        errors=[],
        plan_lines=[
            *plan_lines(spec, plan, executor=executor, judge=judge),
            *notes,
            *chain_quota_lines(spec, user_id=user_id),
        ],
        model_lines=model_notes(spec) + tokenizer_notes(spec, executor=executor, judge=judge),
        quota_lines=quota_lines(target=spec.target, user_id=user_id, worst=worst),
        warnings=[
            *spec.warnings,
            *plan.warnings,
            *unfilled_placeholders(spec, recipe_args if recipe_args else None),
            *_approve_warnings(spec),
            *price_warnings(worst.models),
            *_models_unchecked(),
        ],
        worst=worst,
    )


MODEL_FIELDS = {
    "executor": ("loop.do.model", "model"),
    "judge": ("loop.while.judge_model", "judge_model"),
    "wrapup": ("loop.do.budget.watch.model", "loop.do.budget.watch.model"),
}
MODEL_LINE = re.compile(r"""\s*(model|judge_model)\s*:\s*['"]?([^'"#\s]+)""")


def _model_issues(spec, executor: str, judge: str | None, wrapup: str | None = None) -> list[RecipeIssue]:
    """With a key: a recipe error for each model the key cannot use, at the line naming it
    (a model from the settings has no line: the setting is named instead)."""
    issues = []
    for role, model in (("executor", executor), ("wrapup", wrapup), ("judge", judge)):
        problem = models_api.unusable([model]) if model else None
        if problem:
            issues.append(RecipeIssue(Path(spec.path).name, *_model_place(spec, role, model), problem))
    return issues


def _models_unchecked() -> list[str]:
    """With a key whose list could not be read: say the models went unchecked (not an error)."""
    problem = models_api.available_models().error if models_api.has_key() else None
    return [f"models not checked: {problem}"] if problem else []


def _model_place(spec, role: str, model: str) -> tuple[int | None, str]:
    """(line, field) of where the recipe names the model."""
    own = {"executor": spec.do.model, "judge": spec.loop_while.judge_model, "wrapup": spec.do.watch_model}[role]
    top = {"executor": spec.model, "judge": spec.judge_model, "wrapup": None}[role]
    if not (own or top):
        return None, "RYSH_EXECUTOR_MODEL" if role == "executor" else "RYSH_JUDGE_MODEL"
    field = MODEL_FIELDS[role][0 if own else 1]
    name = field.rsplit(".", 1)[-1]
    try:
        lines = Path(spec.path).read_text().splitlines()
    except OSError:
        return None, field
    # the judge's may be rysh's `loop.while.model:`; the wrap-up's is a `model:` under watch:
    names = {name, "model"} if own and role != "executor" else {name}
    for number, text in enumerate(lines, 1):
        match = MODEL_LINE.match(text)
        if match and match.group(1) in names and match.group(2) == model:
            return number, field
    return None, field


def _approve_warnings(spec) -> list[str]:
    """`approve:` entries that name no tool of this kind of recipe would never hold anything
    (nor, for an MCP server's, a tool of it the recipe is offered: toolservers.checks)."""
    known = {t["name"] for t in RESULT_TOOLS}
    if spec.kind == Kind.WEB:
        known |= BROWSER_TOOL_NAMES
    elif spec.workdir is not None:
        known |= {BASH_TOOL["name"], *FILE_TOOL_NAMES}
    else:
        known |= {HTTP_TOOL["name"]}
    return [
        f"approve: {entry!r} names no {spec.kind} tool ({', '.join(sorted(known))}), so it never holds anything"
        for entry in spec.approve
        if entry.partition(":")[0].partition("(")[0].strip() not in known
        and entry.partition("__")[0] not in {use.server for use in spec.mcp}  # an MCP tool (`tracker__add_comment`)
    ] + mcp_approve_warnings(spec)
