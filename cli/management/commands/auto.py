"""`python manage.py auto <kind> <action> ...` — the CLI face of the controls (docs/command-line.md), and
`auto quota|price set|list|rm ...` — spend governance for admins on the server (docs/spend.md).

Targets are recipe names (the active or latest run of that recipe; with the run's arguments
after the name when a coding recipe's runs go side by side), paths to recipe files for `run`
and `check`, or run ids written `#12` or `12`.

This module builds the parser and dispatches; the verbs live in cli/ (one module per
domain: runs, recipes, evals, forks, schedules, spend for quotas and prices, mcp, …).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.context import CLI, audit_context, cli_actor_name
from catalogue.spec import Kind
from cli import approvals, forks, profiles, reading, recipes, schedules, workspaces
from cli import runs as controls
from cli.agents import AGENT, agent_cli
from cli.common import Cli, database_problem, quiet_libraries
from cli.evals import do_eval
from cli.mcp import mcp_cli
from cli.spend import price_cli, quota_cli
from runs import services
from runs.arming import RUN_OPTIONS
from rysh_site import __version__

ACTIONS = [
    "run",
    "status",
    "stop",
    "cancel",
    "continue",
    "grant",
    "resume",
    "land",
    "results",
    "show",
    "history",
    "check",
    "approve",
    "reject",
    "schedule",
    "profile",
    "rejudge",
    "diff",
    "keep",
    "discard",
    "fork",
    "compare",
]
SPEND = {"quota": quota_cli, "price": price_cli, "mcp": mcp_cli}  # `auto quota …`, `auto price …`: no recipe kind
SPEND_ACTIONS = ["set", "list", "rm", "add", "test"]  # add|test: `auto mcp …` (cli/mcp.py)
EVAL = "eval"  # `auto eval RECIPE|PATH …` (cli/evals.py): the recipe or folder where an action goes
VERBS = {
    **recipes.VERBS,
    **controls.VERBS,
    **approvals.VERBS,
    **reading.VERBS,
    **schedules.VERBS,
    **profiles.VERBS,
    **workspaces.VERBS,
    **forks.VERBS,
}


class Command(BaseCommand):
    help = (
        "Run and steer recipes: auto <web|task|code> run|status|stop|cancel|continue|grant|resume|land|"
        "results|show|history|check|approve|reject [NAME_OR_PATH] [ARGS...]; "
        "auto <kind> rejudge NAME [--until-file F] [-n 10] [--judge-model M]; "
        "auto task|code diff|keep|discard NAME [--run ID] [--pass N] [--branch B]; auto task|code run NAME --base REF --workdir DIR; "
        "auto <kind> fork NAME --run ID --pass N [--redo] [--prompt-file F] [--until TEXT] [--budget SIZE] "
        "[--model M] [--effort E] [--iterate-with TEXT] [--wait]; auto <kind> compare RUN_A [RUN_B] [--json]; "
        "auto <kind> schedule add|list|rm|enable|disable|owner ...; auto web profile list|rm [NAME]; "
        "auto quota set|list|rm ...; auto price set|list|rm ...; auto mcp add|list|rm|test ...; "
        "auto eval RECIPE|PATH [--case C] [--result] [--json]; "
        'auto agent run NAME "prompt" [--budget SIZE] [--until GOAL] [--wait]; auto agent list'
    )

    def get_version(self) -> str:
        """`auto --version`: the dashboard's version (rysh_site/__init__.py), not Django's."""
        return __version__

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=[kind.value for kind in Kind] + list(SPEND) + [EVAL, AGENT])
        # checked in handle(): after `eval` it is the recipe (kind/name) or the folder of the cases
        parser.add_argument("action", metavar=f"{{{','.join(ACTIONS + SPEND_ACTIONS)}}}")
        parser.add_argument("target", nargs="?", help="recipe name, recipe file, or run id (#12)")
        parser.add_argument("recipe_args", nargs="*", metavar="ARGS")
        parser.add_argument("--dry-run", action="store_true", help="print the resolved prompt and plan; change nothing")
        parser.add_argument(
            "--wait", action="store_true", help="block until the run ends; exit 0 for fulfilled/done, 2 otherwise"
        )
        parser.add_argument("--headless", action="store_true", default=True)
        parser.add_argument("--headed", dest="headless", action="store_false")
        parser.add_argument("--provider", choices=["auto", "anthropic", "scripted"])
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--tz", help="schedule add: the timezone the cron is read in (default TIME_ZONE)")
        parser.add_argument("--owner", help="schedule add: the user its runs are started for (their quota counts)")
        parser.add_argument("--window", help="quota: day, month or rolling (24 h)")
        parser.add_argument("--tokens", help="quota: a limit in counted tokens (20p, 4b, 1s)")
        parser.add_argument("--dollars", help="quota: a limit in USD (50, 12.50)")
        for name in ("input", "output", "cache_read", "cache_write", "cache_write_1h"):
            parser.add_argument(
                f"--{name.replace('_', '-')}", dest=f"price_{name}", help="price set: USD per million tokens"
            )
        parser.add_argument("--command", dest="mcp_command", help="mcp add: the stdio server's command line")
        parser.add_argument("--url", dest="mcp_url", help="mcp add: the streamable-HTTP server's URL")
        parser.add_argument("--env", dest="mcp_env", action="append", help="mcp add: NAME=VALUE for a stdio server")
        parser.add_argument("--header", dest="mcp_header", action="append", help="mcp add: 'Name: value' for HTTP")
        parser.add_argument(
            "--outside-sandbox", dest="mcp_outside_sandbox", action="store_true", help="mcp add: run with network"
        )
        parser.add_argument("--case", dest="eval_case", help="eval: only this case")
        parser.add_argument(
            "--result", dest="eval_result", action="store_true", help="eval: grade the last suite's runs again"
        )
        parser.add_argument("--json", dest="eval_json", action="store_true", help="eval, compare: one JSON document")
        parser.add_argument("--until-file", help="rejudge: a file holding the new goal (default: the current until)")
        parser.add_argument("-n", dest="rejudge_n", type=int, default=10, help="rejudge: the last N judged passes")
        parser.add_argument("--judge-model", help="rejudge: the judge model (default: the recipe's)")
        parser.add_argument("--time", dest="grant_time", help="grant: extra outer time (90s, 7m, 1h30m)")
        parser.add_argument("--run", dest="run_id", help="diff|keep|discard|fork: this run (#12) instead of the latest")
        parser.add_argument(
            "--pass", dest="pass_number", type=int, help="diff: one pass's changes; fork: from the end of this pass"
        )
        parser.add_argument("--redo", action="store_true", help="fork: redo pass N (from the end of pass N-1)")
        parser.add_argument("--prompt-file", help="fork: a file holding the fork's task prompt")
        parser.add_argument("--until", dest="fork_until", help="fork: the fork's until (the goal the judge checks)")
        parser.add_argument("--model", dest="fork_model", help="fork: the fork's executor model")
        parser.add_argument("--effort", help="fork: the fork's effort (low, medium, high)")
        parser.add_argument("--iterate-with", help="fork: the fork's iterate_with (the next pass's prompt)")
        parser.add_argument("--branch", help="keep: under this branch (rysh/…) instead of the run's own")
        parser.add_argument("--base", help="run: the branch, tag or commit a coding run's copy starts from")
        parser.add_argument(
            "--workdir", help="run: a coding recipe's agent works in this folder of the repository (not its workdir:)"
        )
        for option in RUN_OPTIONS:
            parser.add_argument(option.flag, dest=option.dest, help=option.help)

    def handle(self, *args, kind, action, target, recipe_args, **options):
        if action != "check" and (problem := database_problem()):  # a check reads a recipe, not the database
            raise CommandError(problem)
        with quiet_libraries():
            return self._handle(kind, action, target, recipe_args, options)

    def _handle(self, kind, action, target, recipe_args, options):
        if kind == EVAL:
            if target or recipe_args:
                raise CommandError(f"auto eval {action}: expected one recipe (kind/name) or folder, got more")
            with audit_context(source=CLI, actor_name=cli_actor_name()):
                return do_eval(Cli(kind=kind, stdout=self.stdout, stderr=self.stderr), action, options)
        if kind == AGENT:  # `auto agent run NAME "prompt"` (cli/agents.py)
            with audit_context(source=CLI, actor_name=cli_actor_name()):
                return agent_cli(
                    Cli(kind=kind, stdout=self.stdout, stderr=self.stderr), action, target, recipe_args, options
                )
        if action not in ACTIONS + SPEND_ACTIONS:
            choices = ", ".join(repr(a) for a in ACTIONS + SPEND_ACTIONS)
            raise CommandError(f"argument action: invalid choice: {action!r} (choose from {choices})")
        if (kind in SPEND) != (action in SPEND_ACTIONS):
            if kind in SPEND:
                raise CommandError(f"auto {kind} {action}: expected auto {kind} {'|'.join(SPEND_ACTIONS)} ...")
            raise CommandError(f"auto {kind} {action}: {action} is for quotas and prices (auto quota|price {action})")
        if kind in SPEND:
            words = [target, *recipe_args] if target else []
            with audit_context(source=CLI, actor_name=cli_actor_name()):
                for line in SPEND[kind](action, words, options):
                    self.stdout.write(line)
            return
        if action not in ("status", "history", "schedule", "profile") and not target and not options.get("run_id"):
            raise CommandError(f"auto {kind} {action} needs a recipe name or a run id")
        cli = Cli(kind=kind, stdout=self.stdout, stderr=self.stderr)
        try:
            # the CLI has no login: audit rows name the OS user (`cli:<user>`) and no address
            with audit_context(source=CLI, actor_name=cli_actor_name()):
                return VERBS[action](cli, target, recipe_args, options)
        except services.RunRefused as exc:
            raise CommandError(str(exc)) from None
