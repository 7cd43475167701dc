"""`auto eval RECIPE|PATH [--case C] [--result] [--json] [--provider P]` (docs/evals.md): the plan first, then the
suite waited for — on the workers when a cluster runs, else driven in this process — and per case
pass/fail, tokens, $ and what failed. `--result` grades the last suite's recorded runs again.

Exit codes (rysh's): 0 every case passed, 1 a case failed, 2 refused or broken input, 3 the
suite's ceiling ended it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.conf import settings

from budgets.prices import format_money
from catalogue.packages import MANIFEST_NAME, PACKAGES_DIR
from cli.common import Cli
from evals.local import suite_drive_here
from evals.models import CaseState, Suite, SuiteState
from evals.services import SuiteRefused, suite_exit_code, suite_last, suite_plan, suite_regrade, suite_start
from ops.health import workers_seen

REFUSED = 2
POLL_SECONDS = 0.5


def do_eval(cli: Cli, what: str, options) -> None:
    as_json = options.get("eval_json")
    try:
        if options.get("eval_result"):
            suite = _regrade(what)
            plan_lines = []
        else:
            path, target = _path_or_target(what)
            plan = suite_plan(target=target, path=path, case=options.get("eval_case"))
            plan_lines = plan.lines
            if not as_json:
                for line in plan_lines:
                    cli.stdout.write(line)
            provider = options.get("provider")
            suite = suite_start(user=None, target=target, path=path, case=options.get("eval_case"), provider=provider)
            suite = _wait(suite)
    except SuiteRefused as exc:
        if as_json:
            cli.stdout.write(json.dumps({"refused": str(exc), "exit": REFUSED}))
        else:
            cli.stderr.write(f"refused: {exc}")
        raise SystemExit(REFUSED) from None
    code = suite_exit_code(suite)
    if as_json:
        cli.stdout.write(json.dumps(suite_document(suite, plan_lines, code), indent=2))
    else:
        for line in suite_lines(suite):
            cli.stdout.write(line)
    raise SystemExit(code)


def _path_or_target(what: str) -> tuple[str | None, str | None]:
    """A folder on disk runs in rysh's layout; kind/name is a recipe of the catalogue; a bare
    name with a package folder in the recipes repository is that package (docs/packages.md)."""
    if Path(what).is_dir():
        return what, None
    package = Path(settings.RYSH_RECIPES_REPO) / PACKAGES_DIR / what
    if "/" not in what and (package / MANIFEST_NAME).is_file():
        return str(package), None
    return None, what


def _regrade(what: str) -> Suite:
    path, target = _path_or_target(what)
    key = str(Path(path).resolve()) if path else target
    suite = suite_last(target=key)
    if suite is None:
        raise SuiteRefused(f"{what} has no suite yet: run `auto eval {what}` first")
    return suite_regrade(suite=suite, user=None)


def _wait(suite: Suite) -> Suite:
    """On the workers when a cluster is running; else here, one case after the other."""
    if not workers_seen().exists():
        return suite_drive_here(suite)
    while True:
        suite.refresh_from_db()
        if suite.state != SuiteState.RUNNING:
            return suite
        time.sleep(POLL_SECONDS)


def suite_lines(suite: Suite) -> list[str]:
    lines = [f"suite #{suite.pk} of {suite.target} ({suite.side}): {suite.state}"]
    for case in suite.cases.order_by("name"):
        money = format_money(case.cost) if case.run_id else "-"
        lines.append(f"  {case.state.upper():7} {case.name}: {case.tokens:,} tokens, {money}")
        lines += [f"    {f['assertion']}: {f['message']}" for f in case.failures]
        if case.cause and case.state in (CaseState.ERROR, CaseState.BROKEN, CaseState.FAILED):
            lines += [f"    {line}" for line in case.cause.splitlines()]
    passed = suite.cases.filter(state=CaseState.PASSED).count()
    ran = suite.cases.exclude(state=CaseState.BROKEN).count()
    lines.append(
        f"{passed}/{ran} passed; {suite.tokens_counted:,} of {suite.budget_tokens:,} tokens counted "
        f"(the ceiling), {format_money(suite.cost)}"
    )
    return lines


def suite_document(suite: Suite, plan_lines: list[str], code: int) -> dict:
    return {
        "suite": suite.pk,
        "target": suite.target,
        "side": suite.side,
        "commit": suite.commit_sha,
        "state": suite.state,
        "exit": code,
        "plan": plan_lines,
        "budget_tokens": suite.budget_tokens,
        "tokens_counted": suite.tokens_counted,
        "cost": None if suite.cost is None else str(suite.cost),
        "cases": [
            {
                "name": c.name,
                "state": c.state,
                "run": c.run_id,
                "tokens": c.tokens,
                "cost": None if c.cost is None else str(c.cost),
                "failures": c.failures,
                "rubric": {"verdict": c.rubric_verdict, "reason": c.rubric_reason} if c.rubric_verdict else None,
                "cause": c.cause,
            }
            for c in suite.cases.order_by("name")
        ],
    }
