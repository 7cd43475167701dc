"""`auto <kind> check PATH|NAME [ARGS…]` (the recipe, its plan, models, quotas and warnings)
and `auto <kind> rejudge NAME` (a proposed judge over the recipe's last judged results)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from agents import models_api
from agents.browser_tools import BROWSER_TOOL_NAMES
from agents.coding_tools import BASH_TOOL, FILE_TOOL_NAMES
from agents.task_tools import HTTP_TOOL, RESULT_TOOLS
from budgets.plan import resolve
from catalogue.checks import extra_issues
from catalogue.plan_report import model_notes, models_for, plan_lines
from catalogue.recipe import RecipeError, RecipeIssue, load_recipe, parse_recipe, unfilled_placeholders
from catalogue.selectors import tokenizer_notes
from catalogue.spec import Kind
from catalogue.workdir import find_recipe
from evals.checks import case_check
from evals.sources import cases_beside
from runs import services
from runs.cli.common import Cli
from runs.outlook import WorstCase, price_warnings, quota_lines
from runs.workbench import rejudge
from toolservers.checks import approve_warnings as mcp_approve_warnings


def do_check(cli: Cli, target, recipe_args, options):
    try:
        path = find_recipe(target, kind=cli.kind, root=settings.RYSH_RECIPES_REPO)
        spec = load_recipe(path, kind=cli.kind)
    except FileNotFoundError as exc:
        raise CommandError(str(exc)) from None
    except RecipeError as exc:
        for issue in exc.issues:
            cli.stderr.write(str(issue))
        raise CommandError(f"{len(exc.issues)} error(s) in {target}") from None
    # the installation's and the recipe's quotas: the CLI has no user, so no user quota
    report = check_report(spec, recipe_args=recipe_args, user_id=None)
    if report.errors:
        for issue in report.errors:
            cli.stderr.write(str(issue))
        raise CommandError(f"{len(report.errors)} error(s) in {target}")
    for line in report.plan_lines:
        cli.stdout.write(line)
    for line in report.model_lines:
        cli.stdout.write(f"model: {line}")
    for line in report.quota_lines:
        cli.stdout.write(f"quota: {line}")
    checks = [case_check(case, spec) for case in cases_beside(path, root=settings.RYSH_RECIPES_REPO)]
    warnings = [*report.warnings, *(warning for check in checks for warning in check.warnings)]
    if warnings:
        cli.stdout.write("warnings:")
        for warning in warnings:
            cli.stdout.write(f"  - {warning}")
    if checks:
        cli.stdout.write(f"eval cases: {len(checks)}")
        for check in checks:
            cli.stdout.write(f"  - {check.line}")
    if case_errors := [error for check in checks for error in check.errors]:
        for error in case_errors:
            cli.stderr.write(str(error))
        raise CommandError(f"{len(case_errors)} error(s) in the eval cases of {target}")
    cli.stdout.write(f"ok: {spec.target} is valid")


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
    plan = resolve(spec.do, spec.loop_while)
    executor, judge = models_for(spec)
    if issues := _model_issues(spec, executor, judge if plan.judge_tokens else None):
        return CheckReport(errors=issues)
    worst = WorstCase.of(plan, executor=executor, judge=judge)
    return CheckReport(
        errors=[],
        plan_lines=plan_lines(spec, plan, executor=executor, judge=judge),
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


def do_rejudge(cli: Cli, target, recipe_args, options):
    """The proposed judge over the recipe's last N snapshotted results, here and now."""
    source = services.recipe_source(kind=cli.kind, name_or_path=target)
    try:
        spec = parse_recipe(source.text, path=source.path, kind=cli.kind)
    except RecipeError as exc:
        raise CommandError(str(exc)) from None
    until = (spec.loop_while.until or "").strip()
    if options.get("until_file"):
        try:
            until = Path(options["until_file"]).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(
                f"cannot read --until-file {options['until_file']}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
    if not until:
        raise CommandError(f"{spec.target} has no until: give the goal to judge against with --until-file")
    judge_model = options.get("judge_model") or models_for(spec)[1]
    asked = dict(kind=cli.kind, name=spec.name, until=until, judge_model=judge_model, n=options["rejudge_n"])
    try:
        estimate = rejudge.rejudge_estimate(**asked, provider=options.get("provider"))
        cli.stdout.write(f"estimate: {estimate.describe()}")
        if estimate.provider == "scripted":
            cli.stdout.write(f"note: {rejudge.SCRIPTED_NOTE}")
        started = rejudge.rejudge_start(**asked, provider=options.get("provider"), enqueue=False)
    except rejudge.RejudgeRefused as exc:
        raise CommandError(str(exc)) from None
    done = rejudge.rejudge_execute(started.pk)
    delta = rejudge.rejudge_delta(done)
    for line in rejudge_table(delta):
        cli.stdout.write(line)
    cli.stdout.write(delta.summary())
    money = (
        "free (offline)"
        if done.provider == "scripted"
        else (f"${done.cost:.4f}" if done.cost is not None else "unpriced")
    )
    cli.stdout.write(
        f"re-judge #{done.pk} {done.cause}: {done.tokens_counted:,} of {done.budget_tokens:,} tokens, {money}"
    )
    if done.cause != "done":
        raise CommandError(f"re-judge #{done.pk} ended: {done.cause}")


MODEL_FIELDS = {"executor": ("loop.do.model", "model"), "judge": ("loop.while.judge_model", "judge_model")}
MODEL_LINE = re.compile(r"""\s*(model|judge_model)\s*:\s*['"]?([^'"#\s]+)""")


def _model_issues(spec, executor: str, judge: str | None) -> list[RecipeIssue]:
    """With a key: a recipe error for each model the key cannot use, at the line naming it
    (a model from the settings has no line: the setting is named instead)."""
    issues = []
    for role, model in (("executor", executor), ("judge", judge)):
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
    own = spec.do.model if role == "executor" else spec.loop_while.judge_model
    top = spec.model if role == "executor" else spec.judge_model
    if not (own or top):
        return None, "RYSH_EXECUTOR_MODEL" if role == "executor" else "RYSH_JUDGE_MODEL"
    field = MODEL_FIELDS[role][0 if own else 1]
    name = field.rsplit(".", 1)[-1]
    try:
        lines = Path(spec.path).read_text().splitlines()
    except OSError:
        return None, field
    for number, text in enumerate(lines, 1):
        match = MODEL_LINE.match(text)
        if match and match.group(1) == name and match.group(2) == model:
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


def rejudge_table(delta) -> list[str]:
    """pass | old | new | what people said | the new judge's reason, one line each."""
    lines = [f"{'pass':<18} {'old':<4} {'new':<10} {'people':<30} new reason"]
    for row in delta.rows:
        item, p = row.item, row.item.run_pass
        where = f"run #{p.run_id} pass {p.number}" if p else "(run deleted)"
        new = (item.new_verdict + (" FLIP" if item.flipped else "")) if item.new_verdict else "not judged"
        people = "—"
        if row.label is not None:
            people = f"judge {'right' if row.label.judge_right else 'wrong'} ({row.truth})"
            people += {True: ", agrees", False: ", disagrees"}.get(row.agrees, "")
        lines.append(f"{where:<18} {item.old_verdict:<4} {new:<10} {people:<30} {item.new_reason}")
    return lines


VERBS = {"check": do_check, "rejudge": do_rejudge}
