"""`auto <kind> fork NAME --run ID --pass N [--redo] [edits…] [--wait]`: a new run that starts from
the state at the end of a pass of another (docs/forks.md), its plan printed first; and
`auto <kind> compare RUN_A [RUN_B] [--json]`: two runs of a recipe side by side (a fork and its
parent when RUN_B is left out)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandError

from cli.common import Cli
from cli.runs import _started, wait
from runs import forks
from runs.forks import compare
from runs.forks.shown import as_data, compare_lines, lineage_said, plan_lines, same_recipe_problem
from runs.models import Run

# a ForkRefused's `field` as the option that sets it
OPTION_OF = {
    "run": "--run",
    "pass": "--pass",
    "pass_number": "--pass",
    "prompt": "--prompt-file",
    "iterate_with": "--iterate-with",
    "until": "--until",
    "model": "--model",
    "effort": "--effort",
    "budget": "--budget",
}


def fork_edits(options) -> forks.ForkEdits:
    """The edits given on the command line; an option left out keeps the parent's value."""
    prompt = None
    if options.get("prompt_file"):
        try:
            prompt = Path(options["prompt_file"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(
                f"cannot read --prompt-file {options['prompt_file']}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
    return forks.ForkEdits(
        prompt=prompt,
        iterate_with=options.get("iterate_with"),
        until=options.get("fork_until"),
        model=options.get("fork_model"),
        effort=options.get("effort"),
        budget=options.get("override_budget"),
    )


def fork_parent(cli: Cli, target, recipe_args, options) -> Run:
    """`--run ID` (of the recipe NAME when both are given), else the recipe's latest run."""
    if options.get("run_id"):
        return cli.run(options["run_id"], states=None)
    return cli.run(target, states=None, args=recipe_args)


def refused(exc: forks.ForkRefused) -> CommandError:
    """The refusal naming the option to change, as the other refusals read (exit status 1)."""
    option, said = OPTION_OF.get(exc.field, ""), str(exc)
    if not option:
        return CommandError(said)
    return CommandError(f"{option}: {said.removeprefix(f'{exc.field}: ')}")


def do_fork(cli: Cli, target, recipe_args, options):
    if options.get("pass_number") is None:
        raise CommandError(f"auto {cli.kind} fork needs --pass N (the pass whose end state the fork starts from)")
    parent = fork_parent(cli, target, recipe_args, options)
    asked = dict(run=parent, pass_number=options["pass_number"], redo=options.get("redo", False))
    if target and not target.lstrip("#").isdigit():
        asked["target"] = f"{cli.kind}/{target}"  # with --run: refused when the run is another recipe's
    edits = fork_edits(options)
    try:
        plan = forks.fork_plan(**asked, edits=edits)
        for line in plan_lines(plan):
            cli.stdout.write(line)
        if options.get("dry_run"):
            cli.stdout.write("dry run: nothing was started")
            return
        run = forks.run_fork(**asked, edits=edits, user=None, provider=options.get("provider"))
    except forks.ForkRefused as exc:
        raise refused(exc) from None
    _started(cli, run)
    cli.stdout.write(lineage_said(run))
    if options.get("wait"):
        wait(cli, run)


def compare_pair(cli: Cli, target, recipe_args) -> tuple[Run, Run]:
    """RUN_A and RUN_B, or RUN_A and the run it was forked from."""
    if len(recipe_args) > 1:
        raise CommandError(f"auto {cli.kind} compare takes two runs, got {1 + len(recipe_args)}")
    a = cli.run(target, states=None)
    if recipe_args:
        return a, cli.run(recipe_args[0], states=None)
    if a.forked_from_id is None:
        raise CommandError(f"run #{a.pk} is not a fork: name the run to compare it with (auto {cli.kind} compare A B)")
    return a, a.forked_from


def do_compare(cli: Cli, target, recipe_args, options):
    a, b = compare_pair(cli, target, recipe_args)
    if problem := same_recipe_problem(a, b):
        raise CommandError(problem)
    try:
        comparison = compare.runs_compare(a, b)
    except compare.CompareRefused as exc:
        raise CommandError(str(exc)) from None
    if options.get("eval_json"):
        cli.stdout.write(json.dumps(as_data(comparison), indent=2, ensure_ascii=False))
        return
    for line in compare_lines(comparison):
        cli.stdout.write(line)


VERBS = {"fork": do_fork, "compare": do_compare}
