"""`auto task diff|keep|discard NAME [--run ID] [--pass N] [--branch B]`: a coding run's working
copy (docs/coding-loops.md)."""

from __future__ import annotations

from pathlib import PurePath

from django.core.management.base import CommandError

from cli.common import Cli
from workspaces import services as workspace_services
from workspaces.copies import CopyError
from workspaces.models import Workspace
from workspaces.selectors import diff_text


def do_diff(cli: Cli, target, recipe_args, options):
    """The unified diff of the run's working copy against the commit it started from."""
    workspace = _workspace(cli, target, options, "diff")
    try:
        text = diff_text(workspace, options.get("pass_number"))
    except CopyError as exc:
        raise CommandError(str(exc)) from None
    cli.stdout.write(text, ending="")
    if not text:
        cli.stderr.write(f"run #{workspace.run_id}: no change in its working copy")


def do_keep(cli: Cli, target, recipe_args, options):
    """Commit and push the work, on the run's branch or under `--branch` (a free name when the
    run's own holds other work)."""
    workspace = _workspace(cli, target, options, "keep")
    try:
        cli.stdout.write(workspace_services.workspace_keep(workspace=workspace, branch=options.get("branch")))
    except workspace_services.WorkspaceRefused as exc:
        raise CommandError(str(exc)) from None


def do_discard(cli: Cli, target, recipe_args, options):
    workspace = _workspace(cli, target, options, "discard")
    try:
        cli.stdout.write(workspace_services.workspace_discard(workspace=workspace))
    except workspace_services.WorkspaceRefused as exc:
        raise CommandError(str(exc)) from None


def _workspace(cli: Cli, target: str, options, verb: str) -> Workspace:
    """The copy of `--run ID` (which must be a run of the recipe named, when one is) or of the
    recipe's latest run."""
    run = cli.run(f"#{options['run_id'].lstrip('#')}" if options.get("run_id") else target, states=None)
    named = target and not target.lstrip("#").isdigit()
    if named and run.name not in (target, PurePath(target).stem if target.endswith(".md") else target):
        raise CommandError(
            f"run #{run.pk} is a run of {run.target}, not of {cli.kind}/{target}: "
            f"name its own recipe (auto {run.kind} {verb} {run.name} --run {run.pk})"
        )
    workspace = Workspace.objects.filter(run=run).select_related("run").first()
    if workspace is None:
        raise CommandError(f"run #{run.pk} of {run.target} has no working copy (its recipe has no workdir:)")
    return workspace


VERBS = {"diff": do_diff, "keep": do_keep, "discard": do_discard}
