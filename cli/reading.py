"""`auto <kind> status|history|results|show …`: what runs are doing, what they did, what they left."""

from __future__ import annotations

from pathlib import Path

from budgets.units import format_tokens
from cli.common import Cli
from runs.chains import chain_text, run_chain
from runs.models import ACTIVE_STATES, Run, RunState
from runs.selectors import live_rows


def do_status(cli: Cli, target, recipe_args, options):
    runs = Run.objects.filter(kind=cli.kind, state__in=ACTIVE_STATES)
    if target:
        runs = runs.filter(name=target)
    rows = live_rows(runs.order_by("created_at"))
    if not rows:
        cli.stdout.write(f"no active {cli.kind} runs")
        return
    header = (
        "run",
        "recipe",
        "args",
        "pass",
        "state",
        "started",
        "deadline",
        "verdict",
        "tokens",
        "cache",
        "headless",
        "model",
    )
    table = [header] + [
        (
            f"#{r.run.pk}",
            r.run.target,
            " ".join(r.run.args) or "-",
            r.pass_label,
            r.state,
            r.started_ago,
            r.deadline,
            r.verdict,
            r.budget_text,
            r.cache,
            ("yes" if r.run.headless else "no") if r.run.kind == "web" else "-",  # only a browser has a head
            r.provider_note,
        )
        for r in rows
    ]
    cli.table(table)


def do_history(cli: Cli, target, recipe_args, options):
    runs = Run.objects.filter(kind=cli.kind, state=RunState.FINISHED)
    if target:
        runs = runs.filter(name=target)
    runs = runs.order_by("-ended_at")[: options["limit"]]
    header = ("ended", "run", "kind", "recipe", "duration", "passes", "tokens", "cost", "cause")
    table = [header] + [
        (
            f"{r.ended_at:%Y-%m-%d %H:%M}",
            f"#{r.pk}",
            r.kind,
            r.name,
            r.duration_text,
            str(r.pass_number),
            format_tokens(r.tokens_counted),
            "-" if r.cost is None else f"${r.cost:.4f}",
            r.cause + (" [scripted]" if r.provider == "scripted" else ""),
        )
        for r in runs
    ]
    if len(table) == 1:
        cli.stdout.write(f"no finished {cli.kind} runs")
        return
    cli.table(table)


def do_results(cli: Cli, target, recipe_args, options):
    run = cli.run(target, states=None, args=recipe_args)
    folder = Path(run.output_dir)
    files = (
        sorted(
            (p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime_ns,
            reverse=True,
        )
        if folder.is_dir()
        else []
    )
    cli.stdout.write(f"results of {run.target} in {folder} (newest first):")
    for path in files:
        cli.stdout.write(f"  {path.relative_to(folder)}  {path.stat().st_size} bytes")
    if not files:
        cli.stdout.write("  (none yet)")


def do_show(cli: Cli, target, recipe_args, options):
    """One run (an id, or the recipe's latest): how it stands, its results, and its on_success
    chain as one line (docs/chains.md)."""
    run = cli.run(target, states=None, args=recipe_args)
    cli.stdout.write(f"run #{run.pk} {run.target}: {run.cause or run.state_label}")
    cli.stdout.write(
        f"  passes {run.pass_number}, {format_tokens(run.tokens_counted)} tokens, results in {run.output_dir}"
    )
    chain = run_chain(run)
    if len(chain) > 1:
        cli.stdout.write(f"  chain: {chain_text(chain)}")


VERBS = {"status": do_status, "history": do_history, "results": do_results, "show": do_show}
