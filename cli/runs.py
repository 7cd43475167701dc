"""`auto <kind> run|resume|continue|stop|cancel|land|grant …`: start a run and steer it, and
`--wait` for it to end (exit 0 for fulfilled/done, 2 otherwise)."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import CommandError

from budgets.plan import Grant as PlanGrant
from budgets.units import parse_duration, parse_tokens
from cli.common import Cli
from runs import services
from runs.arming import RUN_OPTIONS
from runs.engine.verdicts import REPORT_NAME
from runs.models import Run, RunEvent, RunState

SUCCESS_CAUSES = ("fulfilled", "done")


def do_run(cli: Cli, target, recipe_args, options):
    overrides = {o.name: options[o.dest] for o in RUN_OPTIONS if options[o.dest]}
    result = services.run_start(
        kind=cli.kind,
        name_or_path=target,
        args=recipe_args,
        headless=options["headless"],
        overrides=overrides,
        provider=options["provider"],
        dry_run=options["dry_run"],
        base=options.get("base"),
        workdir=options.get("workdir"),
    )
    if isinstance(result, services.DryRun):
        for line in result.lines:
            cli.stdout.write(line)
        return
    _started(cli, result)
    if options["wait"]:
        wait(cli, result)


def do_resume(cli: Cli, target, recipe_args, options):
    previous = cli.run(target, states=None, args=recipe_args)
    run = services.run_resume(run=previous, provider=options["provider"])
    _started(cli, run, resumed=previous)
    if options["wait"]:
        wait(cli, run)


def do_stop(cli: Cli, target, recipe_args, options):
    cli.stdout.write(services.run_stop(run=cli.run(target, args=recipe_args)))


def do_cancel(cli: Cli, target, recipe_args, options):
    cli.stdout.write(services.run_cancel(run=cli.run(target, args=recipe_args)))


def do_land(cli: Cli, target, recipe_args, options):
    cli.stdout.write(services.run_land(run=cli.run(target, args=recipe_args)))


def do_continue(cli: Cli, target, recipe_args, options):
    run = cli.run(target, states=None, args=recipe_args)
    cli.stdout.write(services.run_continue(run=run))
    if options["wait"]:
        wait(cli, run)


def do_grant(cli: Cli, target, recipe_args, options):
    """auto <kind> grant NAME|#ID [--passes N] [--total SIZE] [--time DURATION]"""
    run = cli.run(target, states=None, args=recipe_args)
    try:
        extra = PlanGrant(
            passes=int(options["override_passes"] or 0),
            tokens=parse_tokens(options["override_total"]) if options["override_total"] else 0,
            seconds=parse_duration(options["grant_time"]) if options["grant_time"] else 0,
        )
    except ValueError as exc:
        raise CommandError(f"grant: {exc}") from None
    cli.stdout.write(services.run_grant(run=run, extra=extra))
    if options["wait"]:
        wait(cli, run)


def _started(cli: Cli, run: Run, resumed: Run | None = None):
    how = " (OFFLINE: scripted demo model, not Claude)" if run.provider == "scripted" else f" on {run.executor_model}"
    also = f", resuming run #{resumed.pk}" if resumed else ""
    cli.stdout.write(f"run #{run.pk} queued: {run.target}{how}{also}")
    cli.stdout.write(f"results: {run.output_dir}")


def wait(cli: Cli, run: Run):
    seen = 0
    while True:
        for event in RunEvent.objects.filter(run=run, id__gt=seen).order_by("id"):
            seen = event.id
            cli.stdout.write(f"  {event.created_at:%H:%M:%S} {event.message}")
        run.refresh_from_db()
        if run.state == RunState.FINISHED:
            cli.stdout.write(f"run #{run.pk} finished: {run.cause}")
            cli.stdout.write(f"report: {Path(run.output_dir) / REPORT_NAME}")
            raise SystemExit(0 if run.cause in SUCCESS_CAUSES else 2)
        if run.state == RunState.PAUSED:
            cli.stdout.write(f"run #{run.pk} is {run.state_label}; `auto {run.kind} continue #{run.pk}` picks it up")
            raise SystemExit(2)
        time.sleep(0.3)


VERBS = {
    "run": do_run,
    "resume": do_resume,
    "stop": do_stop,
    "cancel": do_cancel,
    "land": do_land,
    "continue": do_continue,
    "grant": do_grant,
}
