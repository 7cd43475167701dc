"""`auto agent run NAME "prompt" [--budget 2b] [--until GOAL] [--wait]`: run one of rysh's
agent packages (a recipe or loop package: `auto agent run NAME ARGS…`), and `auto agent list`
(docs/packages.md)."""

from __future__ import annotations

from django.core.management.base import CommandError

from catalogue.package_selectors import package_list
from cli.common import Cli
from cli.runs import _started, wait
from runs import services
from runs.packages import package_run_start

AGENT = "agent"  # the word after `auto`
ACTIONS = ("run", "list")


def agent_cli(cli: Cli, action: str, target: str | None, words: list[str], options: dict) -> None:
    if action not in ACTIONS:
        raise CommandError(f"auto agent {action}: expected auto agent {'|'.join(ACTIONS)} ...")
    if action == "list":
        return _list(cli)
    if not target:
        raise CommandError('auto agent run needs a package name: auto agent run NAME "prompt"')
    try:
        result = package_run_start(
            name=target,
            words=words,
            budget=options.get("override_budget"),
            until=options.get("fork_until"),
            provider=options.get("provider"),
            dry_run=options.get("dry_run", False),
        )
    except services.RunRefused as exc:
        raise CommandError(str(exc)) from None
    if isinstance(result, services.DryRun):
        for line in result.lines:
            cli.stdout.write(line)
        return None
    _started(cli, result)
    cli.stdout.write(f"package: {result.package}")
    if options.get("wait"):
        wait(cli, result)
    return None


def _list(cli: Cli) -> None:
    rows = [("NAME", "VERSION", "TYPE", "TOOLS", "EVALS", "STATE")]
    for item in package_list():
        rows.append(
            (
                item.name,
                item.version or "-",
                item.type or "-",
                ",".join(item.tools) or "-",
                str(len(item.evals)),
                "ok" if item.runnable else "broken",
            )
        )
    cli.table(rows)
