"""`auto <kind> approve|reject NAME|#ID [REASON…]`: answer the run's pending approval."""

from __future__ import annotations

from cli.common import Cli
from runs import services


def do_approve(cli: Cli, target, recipe_args, options):
    run = cli.run(target)
    cli.stdout.write(
        services.approval_answer(
            approval=services.pending_approval(run), user=None, approved=True, reason=" ".join(recipe_args)
        )
    )


def do_reject(cli: Cli, target, recipe_args, options):
    run = cli.run(target)
    cli.stdout.write(
        services.approval_answer(
            approval=services.pending_approval(run), user=None, approved=False, reason=" ".join(recipe_args)
        )
    )


VERBS = {"approve": do_approve, "reject": do_reject}
