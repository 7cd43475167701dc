"""`python manage.py auto <kind> <action> ...` — the CLI face of the controls (SPEC §5), and
`auto quota|price set|list|rm ...` — spend governance for admins on the server (SPEC §10).

Targets are recipe names (the active or latest run of that recipe), paths to recipe
files for `run` and `check`, or run ids written `#12` or `12`.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agents import models_api, profiles
from agents.browser import BROWSER_TOOL_NAMES
from agents.coding_tools import BASH_TOOL, FILE_TOOL_NAMES
from agents.task_tools import HTTP_TOOL, RESULT_TOOLS
from audit.context import CLI, audit_context, cli_actor_name
from budgets.plan import Grant as PlanGrant
from budgets.plan import resolve
from budgets.units import format_tokens, parse_duration, parse_tokens
from catalogue.checks import extra_issues
from catalogue.plan_report import model_notes, models_for, plan_lines
from catalogue.recipe import RecipeError, RecipeIssue, load_recipe, parse_recipe, unfilled_placeholders
from catalogue.selectors import tokenizer_notes
from catalogue.spec import Kind
from catalogue.workdir import find_recipe
from runs import rejudge, services
from runs.judge import REPORT_NAME
from runs.models import ACTIVE_STATES, Run, RunEvent, RunState
from runs.outlook import WorstCase, price_warnings, quota_lines
from runs.selectors import live_rows
from schedules import services as schedule_services
from schedules.models import RecipeSchedule
from spend.cli import price_cli, quota_cli
from workspaces import services as workspace_services
from workspaces.copies import CopyError
from workspaces.models import Workspace
from workspaces.selectors import diff_text

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
]
SPEND = {"quota": quota_cli, "price": price_cli}  # `auto quota …`, `auto price …`: no recipe kind
SPEND_ACTIONS = ["set", "list", "rm"]
OVERRIDE_OPTIONS = ["budget", "steps", "duration", "passes", "total", "total_duration", "takeover_when"]
SUCCESS_CAUSES = ("fulfilled", "done")


class Command(BaseCommand):
    help = (
        "Run and steer recipes: auto <web|task> run|status|stop|cancel|continue|grant|resume|land|"
        "results|history|check|approve|reject [NAME_OR_PATH] [ARGS...]; "
        "auto <kind> rejudge NAME [--until-file F] [-n 10] [--judge-model M]; "
        "auto task diff|keep|discard NAME [--run ID] [--pass N]; "
        "auto <kind> schedule add|list|rm|enable|disable|owner ...; auto web profile list|rm [NAME]; "
        "auto quota set|list|rm ...; auto price set|list|rm ..."
    )

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=[kind.value for kind in Kind] + list(SPEND))
        parser.add_argument("action", choices=ACTIONS + SPEND_ACTIONS)
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
        parser.add_argument("--until-file", help="rejudge: a file holding the new goal (default: the current until)")
        parser.add_argument("-n", dest="rejudge_n", type=int, default=10, help="rejudge: the last N judged passes")
        parser.add_argument("--judge-model", help="rejudge: the judge model (default: the recipe's)")
        parser.add_argument("--time", dest="grant_time", help="grant: extra outer time (90s, 7m, 1h30m)")
        parser.add_argument("--run", dest="run_id", help="diff|keep|discard: this run (#12) instead of the latest")
        parser.add_argument("--pass", dest="pass_number", type=int, help="diff: one pass's changes")
        for name in OVERRIDE_OPTIONS:
            parser.add_argument(
                f"--{name.replace('_', '-')}", dest=f"override_{name}", help=f"per-run override of {name}"
            )

    def handle(self, *args, kind, action, target, recipe_args, **options):
        self.kind = kind
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
        try:
            # the CLI has no login: audit rows name the OS user (`cli:<user>`) and no address
            with audit_context(source=CLI, actor_name=cli_actor_name()):
                return getattr(self, f"do_{action}")(target, recipe_args, options)
        except services.RunRefused as exc:
            raise CommandError(str(exc)) from None

    # -- rejudge -----------------------------------------------------------------------

    def do_rejudge(self, target, recipe_args, options):
        """The proposed judge over the recipe's last N snapshotted results, here and now."""
        source = services.recipe_source(kind=self.kind, name_or_path=target)
        try:
            spec = parse_recipe(source.text, path=source.path, kind=self.kind)
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
        asked = dict(kind=self.kind, name=spec.name, until=until, judge_model=judge_model, n=options["rejudge_n"])
        try:
            estimate = rejudge.rejudge_estimate(**asked, provider=options.get("provider"))
            self.stdout.write(f"estimate: {estimate.describe()}")
            if estimate.provider == "scripted":
                self.stdout.write(f"note: {rejudge.SCRIPTED_NOTE}")
            started = rejudge.rejudge_start(**asked, provider=options.get("provider"), enqueue=False)
        except rejudge.RejudgeRefused as exc:
            raise CommandError(str(exc)) from None
        done = rejudge.rejudge_execute(started.pk)
        delta = rejudge.rejudge_delta(done)
        for line in rejudge_table(delta):
            self.stdout.write(line)
        self.stdout.write(delta.summary())
        money = (
            "free (offline)"
            if done.provider == "scripted"
            else (f"${done.cost:.4f}" if done.cost is not None else "unpriced")
        )
        self.stdout.write(
            f"re-judge #{done.pk} {done.cause}: {done.tokens_counted:,} of {done.budget_tokens:,} tokens, {money}"
        )
        if done.cause != "done":
            raise CommandError(f"re-judge #{done.pk} ended: {done.cause}")

    # -- check / run -------------------------------------------------------------------

    def do_check(self, target, recipe_args, options):
        try:
            spec = load_recipe(find_recipe(target, kind=self.kind, root=settings.RYSH_RECIPES_REPO), kind=self.kind)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        except RecipeError as exc:
            for issue in exc.issues:
                self.stderr.write(str(issue))
            raise CommandError(f"{len(exc.issues)} error(s) in {target}") from None
        if extra := extra_issues(spec):  # what needs the database, e.g. notify: channels
            for issue in extra:
                self.stderr.write(str(issue))
            raise CommandError(f"{len(extra)} error(s) in {target}")
        plan = resolve(spec.do, spec.loop_while)
        executor, judge = models_for(spec)
        if issues := _model_issues(spec, executor, judge if plan.judge_tokens else None):
            for issue in issues:
                self.stderr.write(str(issue))
            raise CommandError(f"{len(issues)} error(s) in {target}")
        for line in plan_lines(spec, plan, executor=executor, judge=judge):
            self.stdout.write(line)
        for line in model_notes(spec) + tokenizer_notes(spec, executor=executor, judge=judge):
            self.stdout.write(f"model: {line}")
        worst = WorstCase.of(plan, executor=executor, judge=judge)
        # the installation's and the recipe's quotas: the CLI has no user, so no user quota
        for line in quota_lines(target=spec.target, user_id=None, worst=worst):
            self.stdout.write(f"quota: {line}")
        warnings = [
            *spec.warnings,
            *plan.warnings,
            *unfilled_placeholders(spec, recipe_args if recipe_args else None),
            *_approve_warnings(spec),
            *price_warnings(worst.models),
            *_models_unchecked(),
        ]
        if warnings:
            self.stdout.write("warnings:")
            for warning in warnings:
                self.stdout.write(f"  - {warning}")
        self.stdout.write(f"ok: {spec.target} is valid")

    def do_run(self, target, recipe_args, options):
        overrides = {k: options[f"override_{k}"] for k in OVERRIDE_OPTIONS if options[f"override_{k}"]}
        result = services.run_start(
            kind=self.kind,
            name_or_path=target,
            args=recipe_args,
            headless=options["headless"],
            overrides=overrides,
            provider=options["provider"],
            dry_run=options["dry_run"],
        )
        if isinstance(result, services.DryRun):
            for line in result.lines:
                self.stdout.write(line)
            return
        self._started(result)
        if options["wait"]:
            self._wait(result)

    def do_resume(self, target, recipe_args, options):
        previous = self._run(target, states=None)
        run = services.run_resume(run=previous, provider=options["provider"])
        self._started(run, resumed=previous)
        if options["wait"]:
            self._wait(run)

    def _started(self, run: Run, resumed: Run | None = None):
        how = (
            " (OFFLINE: scripted demo model, not Claude)" if run.provider == "scripted" else f" on {run.executor_model}"
        )
        also = f", resuming run #{resumed.pk}" if resumed else ""
        self.stdout.write(f"run #{run.pk} queued: {run.target}{how}{also}")
        self.stdout.write(f"results: {run.output_dir}")

    def _wait(self, run: Run):
        seen = 0
        while True:
            for event in RunEvent.objects.filter(run=run, id__gt=seen).order_by("id"):
                seen = event.id
                self.stdout.write(f"  {event.created_at:%H:%M:%S} {event.message}")
            run.refresh_from_db()
            if run.state == RunState.FINISHED:
                self.stdout.write(f"run #{run.pk} finished: {run.cause}")
                self.stdout.write(f"report: {Path(run.output_dir) / REPORT_NAME}")
                raise SystemExit(0 if run.cause in SUCCESS_CAUSES else 2)
            if run.state == RunState.PAUSED:
                self.stdout.write(
                    f"run #{run.pk} is {run.state_label}; `auto {run.kind} continue {run.name}` picks it up"
                )
                raise SystemExit(2)
            time.sleep(0.3)

    # -- controls ----------------------------------------------------------------------

    def do_stop(self, target, recipe_args, options):
        self.stdout.write(services.run_stop(run=self._run(target)))

    def do_cancel(self, target, recipe_args, options):
        self.stdout.write(services.run_cancel(run=self._run(target)))

    def do_land(self, target, recipe_args, options):
        self.stdout.write(services.run_land(run=self._run(target)))

    def do_continue(self, target, recipe_args, options):
        run = self._run(target, states=None)
        self.stdout.write(services.run_continue(run=run))
        if options["wait"]:
            self._wait(run)

    def do_grant(self, target, recipe_args, options):
        """auto <kind> grant NAME|#ID [--passes N] [--total SIZE] [--time DURATION]"""
        run = self._run(target, states=None)
        try:
            extra = PlanGrant(
                passes=int(options["override_passes"] or 0),
                tokens=parse_tokens(options["override_total"]) if options["override_total"] else 0,
                seconds=parse_duration(options["grant_time"]) if options["grant_time"] else 0,
            )
        except ValueError as exc:
            raise CommandError(f"grant: {exc}") from None
        self.stdout.write(services.run_grant(run=run, extra=extra))
        if options["wait"]:
            self._wait(run)

    def do_approve(self, target, recipe_args, options):
        run = self._run(target)
        self.stdout.write(
            services.approval_answer(
                approval=services.pending_approval(run), user=None, approved=True, reason=" ".join(recipe_args)
            )
        )

    def do_reject(self, target, recipe_args, options):
        run = self._run(target)
        self.stdout.write(
            services.approval_answer(
                approval=services.pending_approval(run), user=None, approved=False, reason=" ".join(recipe_args)
            )
        )

    def do_schedule(self, target, recipe_args, options):
        """auto <kind> schedule add NAME WHEN RECIPE [ARGS…] [--tz TZ] [--owner USER] | list |
        rm|enable|disable NAME | owner NAME [USER] (no USER: the schedule has no owner)"""
        sub = target or "list"
        try:
            if sub == "list":
                return self._schedule_list()
            if sub == "add":
                if len(recipe_args) < 3:
                    raise CommandError(f'auto {self.kind} schedule add NAME "WHEN" RECIPE [ARGS...] [--tz TZ]')
                name, when, recipe, *args = recipe_args
                services.recipe_source(kind=self.kind, name_or_path=recipe)  # refuses an unknown recipe now
                owner = _user(options["owner"]) if options["owner"] else None
                row = schedule_services.schedule_add(
                    name=name, kind=self.kind, recipe=recipe, args=args, when=when, tz=options["tz"] or "", owner=owner
                )
                self.stdout.write(
                    f"schedule {row.name}: {row.command} at {row.when}"
                    f" ({row.timezone or settings.TIME_ZONE}); next run {row.q.next_run:%Y-%m-%d %H:%M} UTC"
                    + (f"; runs for {owner.get_username()}" if owner else "")
                )
                return
            if sub == "owner" and len(recipe_args) in (1, 2):
                owner = _user(recipe_args[1]) if len(recipe_args) == 2 else None
                self.stdout.write(schedule_services.schedule_set_owner(name=recipe_args[0], owner=owner))
                return
            if sub not in ("rm", "enable", "disable") or len(recipe_args) != 1:
                raise CommandError(f"auto {self.kind} schedule add|list|rm|enable|disable NAME | owner NAME [USER]")
            action = {
                "rm": schedule_services.schedule_remove,
                "enable": schedule_services.schedule_enable,
                "disable": schedule_services.schedule_disable,
            }[sub]
            self.stdout.write(action(name=recipe_args[0]))
        except schedule_services.ScheduleError as exc:
            raise CommandError(str(exc)) from None

    def _schedule_list(self):
        rows = RecipeSchedule.objects.filter(kind=self.kind).select_related("q", "owner")
        if not rows:
            self.stdout.write(f"no {self.kind} schedules")
            return
        table = [
            ("name", "origin", "owner", "command", "when", "timezone", "next run (UTC)", "state", "failures", "last")
        ]
        for r in rows:
            table.append(
                (
                    r.name,
                    r.origin,
                    schedule_services.schedule_owner(r).shown,
                    r.command,
                    r.when,
                    r.timezone or settings.TIME_ZONE,
                    f"{r.q.next_run:%Y-%m-%d %H:%M}" if r.enabled and r.q.next_run else "-",
                    "enabled" if r.enabled else "disabled",
                    str(r.failures),
                    (r.disabled_reason or r.last_message)[:60],
                )
            )
        self._table(table)

    def do_profile(self, target, recipe_args, options):

        if self.kind != Kind.WEB:
            raise CommandError("browser profiles belong to web recipes: auto web profile list|rm NAME")
        sub = target or "list"
        if sub == "list":
            rows = profiles.profiles_list()
            if not rows:
                self.stdout.write(
                    f"no browser profiles yet in {settings.RYSH_PROFILES_DIR} "
                    "(a web run or `manage.py web_login NAME URL` creates one)"
                )
                return
            self._table(
                [("profile", "size", "last used", "in use")]
                + [
                    (
                        r["name"],
                        f"{r['bytes'] / 1e6:.1f} MB",
                        f"{r['used']:%Y-%m-%d %H:%M}",
                        "yes" if r["in_use"] else "no",
                    )
                    for r in rows
                ]
            )
        elif sub in ("rm", "delete"):
            if len(recipe_args) != 1:
                raise CommandError("auto web profile rm NAME")
            try:
                self.stdout.write(profiles.profile_delete(name=recipe_args[0]))
            except profiles.ProfileRefused as exc:
                raise CommandError(str(exc)) from None
        else:
            raise CommandError(f"unknown profile action {sub!r}: auto web profile list|rm NAME")

    # -- a coding run's working copy (SPEC §11) --------------------------------------------

    def do_diff(self, target, recipe_args, options):
        """The unified diff of the run's working copy against the commit it started from."""
        workspace = self._workspace(target, options)
        try:
            text = diff_text(workspace, options.get("pass_number"))
        except CopyError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(text, ending="")
        if not text:
            self.stderr.write(f"run #{workspace.run_id}: no change in its working copy")

    def do_keep(self, target, recipe_args, options):
        workspace = self._workspace(target, options)
        try:
            self.stdout.write(workspace_services.workspace_keep(workspace=workspace))
        except workspace_services.WorkspaceRefused as exc:
            raise CommandError(str(exc)) from None

    def do_discard(self, target, recipe_args, options):
        workspace = self._workspace(target, options)
        try:
            self.stdout.write(workspace_services.workspace_discard(workspace=workspace))
        except workspace_services.WorkspaceRefused as exc:
            raise CommandError(str(exc)) from None

    def _workspace(self, target: str, options) -> Workspace:
        run = self._run(f"#{options['run_id'].lstrip('#')}" if options.get("run_id") else target, states=None)
        workspace = Workspace.objects.filter(run=run).select_related("run").first()
        if workspace is None:
            raise CommandError(f"run #{run.pk} of {run.target} has no working copy (its recipe has no workdir:)")
        return workspace

    def _run(self, target: str, states=ACTIVE_STATES) -> Run:
        """A run id, or the recipe's active run (any latest run when `states` is None)."""
        digits = target.lstrip("#")
        if digits.isdigit():
            run = Run.objects.filter(pk=int(digits), kind=self.kind).first()
            if run is None:
                raise CommandError(f"no {self.kind} run #{digits}")
            return run
        runs = Run.objects.filter(kind=self.kind, name=target)
        run = (runs.filter(state__in=states) if states else runs).order_by("-created_at", "-id").first()
        if run is None:
            latest = runs.order_by("-created_at", "-id").first()
            if latest is None:
                raise CommandError(f"{self.kind}/{target} has no runs")
            raise CommandError(
                f"{self.kind}/{target} has no active run; its latest, #{latest.pk}, finished ({latest.cause})"
            )
        return run

    # -- reading -----------------------------------------------------------------------

    def do_status(self, target, recipe_args, options):
        runs = Run.objects.filter(kind=self.kind, state__in=ACTIVE_STATES)
        if target:
            runs = runs.filter(name=target)
        rows = live_rows(runs.order_by("created_at"))
        if not rows:
            self.stdout.write(f"no active {self.kind} runs")
            return
        header = (
            "run",
            "recipe",
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
                r.pass_label,
                r.state,
                r.started_ago,
                r.deadline,
                r.verdict,
                r.budget_text,
                r.cache,
                "yes" if r.run.headless else "no",
                r.provider_note,
            )
            for r in rows
        ]
        self._table(table)

    def do_history(self, target, recipe_args, options):
        runs = Run.objects.filter(kind=self.kind, state=RunState.FINISHED)
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
            self.stdout.write(f"no finished {self.kind} runs")
            return
        self._table(table)

    def do_results(self, target, recipe_args, options):
        run = self._run(target, states=None)
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
        self.stdout.write(f"results of {run.target} in {folder} (newest first):")
        for path in files:
            self.stdout.write(f"  {path.relative_to(folder)}  {path.stat().st_size} bytes")
        if not files:
            self.stdout.write("  (none yet)")

    def _table(self, rows):
        widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def _user(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user


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
    """`approve:` entries that name no tool of this kind of recipe would never hold anything."""
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
    ]


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
