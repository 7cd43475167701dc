"""`auto <kind> check PATH|NAME [ARGS…]` (the recipe, its plan, models, quotas and warnings)
and `auto <kind> rejudge NAME` (a proposed judge over the recipe's last judged results)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from catalogue.plan_report import models_for
from catalogue.recipe import RecipeError, load_recipe, parse_recipe
from catalogue.workdir import find_recipe
from cli.common import Cli
from evals.checks import case_check
from evals.sources import cases_beside
from runs import services
from runs.checks import check_report
from runs.workbench import rejudge


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
    asked = dict(
        kind=cli.kind,
        name=spec.name,
        until=until,
        judge_model=judge_model,
        judge_effort=spec.loop_while.effort or "",
        n=options["rejudge_n"],
    )
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
