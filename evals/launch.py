"""Starting a suite (docs/evals.md, "Running a suite"): the plan checked against the quotas, the
Suite and its CaseResults recorded, and each case's run queued on the workers like any run, so
the cases run in parallel. A case whose run cannot start lands as an error with its cause."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from agents.providers import script_beside
from audit.services import audit_record
from budgets.prices import format_money
from budgets.quota import from_micros, to_micros
from budgets.units import format_tokens
from evals.format import Case, version_digest
from evals.grade_run import suite_settle
from evals.models import CaseResult, CaseState, Suite
from evals.planning import Read, arm_case, case_args
from evals.shapes import PlannedCase, SuitePlan, SuiteRefused
from runs.services import EvalCase, RecipeSource, RunRefused, run_start
from rysh_site.roles import user_can
from spend.quotas import current, quotas_for
from workspaces.source import Source

log = logging.getLogger(__name__)
AUTHOR = ("-c", "user.name=rysh evals", "-c", "user.email=evals@rysh.invalid", "-c", "commit.gpgsign=false")


def refuse_unless_allowed(user) -> None:
    """Suites spend money: editors and admins (the command line, with no login, is the server's own)."""
    if user is not None and getattr(user, "is_authenticated", False) and not user_can(user, "edit"):
        raise SuiteRefused("running a suite spends money: only editors and admins may start one")
    if user is not None and not getattr(user, "is_authenticated", False):
        raise SuiteRefused("log in to run a suite")


def refuse_over_quota(plan: SuitePlan, *, target: str, user_id: int | None) -> None:
    """The whole ceiling must fit what every quota that applies leaves, before anything starts."""
    try:
        quotas = [current(q) for q in quotas_for(target=target, user_id=user_id)]
    except DatabaseError as exc:
        raise SuiteRefused(f"the quotas cannot be read: {exc}") from None
    worst = f"suite worst case {plan.budget_tokens:,} tokens ({format_tokens(plan.budget_tokens)})"
    for quota in quotas:
        left = quota.standing
        if quota.tokens is not None and plan.budget_tokens > left.tokens_left:
            raise SuiteRefused(
                f"{worst}; quota {quota.name} leaves {left.tokens_left:,} tokens "
                f"({format_tokens(max(left.tokens_left, 0))}): the suite does not fit, nothing was started"
            )
        if quota.micros is not None:
            if plan.money is None:
                raise SuiteRefused(f"{worst}; quota {quota.name} is in dollars and a model of the suite has no price")
            if to_micros(plan.money) > left.micros_left:
                raise SuiteRefused(
                    f"{worst} ({format_money(plan.money)}); quota {quota.name} leaves "
                    f"{format_money(from_micros(left.micros_left))}: the suite does not fit, nothing was started"
                )


def start_suite(*, user, plan: SuitePlan, read: Read, side: str, change=None, provider: str | None = None) -> Suite:
    refuse_unless_allowed(user)
    if not plan.cases:
        broken = "; ".join(f"{c.name}: {c.errors[0]}" for c in plan.broken) or "no case"
        raise SuiteRefused(f"{plan.target}: nothing to run ({broken})")
    person = user if getattr(user, "is_authenticated", False) else None
    refuse_over_quota(plan, target=plan.target, user_id=person.pk if person else None)
    with transaction.atomic():
        suite = Suite.objects.create(
            recipe=read.recipe,
            target=read.folder or plan.target,
            side=side,
            change_request=change,
            commit_sha=plan.commit_sha,
            recipe_text=plan.recipe_text,
            user=person,
            budget_tokens=plan.budget_tokens,
        )
        for case in plan.broken:
            CaseResult.objects.create(
                suite=suite,
                name=case.name,
                folder=case.folder,
                digest=_digest(case, read),
                state=CaseState.BROKEN,
                cause="\n".join(str(e) for e in case.errors),
                ended_at=timezone.now(),
            )
        audit_record(
            actor=person,
            action="eval.start",
            target=suite,
            detail={
                "target": plan.target,
                "side": side,
                "commit": plan.commit_sha,
                "cases": [p.case.name for p in plan.cases],
                "broken": [c.name for c in plan.broken],
                "budget_tokens": plan.budget_tokens,
                "change": getattr(change, "pk", None),
            },
        )
    providers = [_start_case(suite, read, planned, user=person, provider=provider) for planned in plan.cases]
    chosen = next((p for p in providers if p), "")
    Suite.objects.filter(pk=suite.pk).update(provider=chosen)
    suite.refresh_from_db()
    suite_settle(suite.pk)  # every case may have errored at its start
    suite.refresh_from_db()
    return suite


def _digest(case: Case, read: Read) -> str:
    return version_digest(case, read.text)


def _start_case(suite: Suite, read: Read, planned: PlannedCase, *, user, provider: str | None) -> str:
    """The case's run queued (its CaseResult linked in the same transaction, so the run's end
    always finds it); the provider chosen, or "" when it could not start."""
    case = planned.case
    result = CaseResult.objects.create(
        suite=suite,
        name=case.name,
        folder=case.folder,
        digest=_digest(case, read),
        worst_tokens=planned.worst_tokens,
    )
    try:
        spec, _plan, overrides = arm_case(read, case)
        copy = case_copy(suite, case) if spec.workdir is not None else None
        source = RecipeSource(
            kind=read.kind,
            name=spec.name,
            path=read.path,
            text=read.text,
            recipe=read.recipe,
            script=_script(read),
        )
        placement = EvalCase(
            source=source,
            slot=f"eval/{suite.pk}/{case.name}"[:260],
            output_dir=str(Path(settings.RYSH_RESULTS_DIR) / "evals" / f"suite-{suite.pk}" / case.name),
            copy=copy,
            label=f"eval: case {case.name} of suite #{suite.pk} ({suite.side}"
            + (f" at {suite.commit_sha[:8]}" if suite.commit_sha else "")
            + ")",
        )
        with transaction.atomic():
            run = run_start(
                kind=read.kind,
                name_or_path=read.path,
                args=case_args(case, spec),
                user=user,
                overrides=overrides,
                provider=provider,
                eval_case=placement,
            )
            CaseResult.objects.filter(pk=result.pk).update(run=run)
        return run.provider
    except Exception as exc:  # noqa: BLE001 (the case lands with its cause; the rest go on)
        if not isinstance(exc, RunRefused | SuiteRefused):
            log.exception("suite %s: case %s could not start", suite.pk, case.name)
        CaseResult.objects.filter(pk=result.pk).update(
            state=CaseState.ERROR, cause=f"the run could not start: {exc}", ended_at=timezone.now()
        )
        return ""


def _script(read: Read) -> Path | None:
    """The offline scripted model's script beside the recipe (in the recipes repository's working
    tree, or the demo's copy), as an ordinary run finds it."""
    if read.folder:
        return None
    for root in (Path(settings.RYSH_RECIPES_REPO), Path(settings.BASE_DIR) / "demo" / "recipes"):
        found = script_beside(root / read.path)
        if found:
            return found
    return None


# -- the working copy an eval case starts from --------------------------------------------------


def case_copy(suite: Suite, case: Case) -> Source:
    """A throwaway git repository committed from the case's files/ (empty without one), which the
    run's working copy is made from (the agent works at its top)."""
    home = Path(settings.DATA_DIR) / "evals" / f"suite-{suite.pk}" / case.name
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    for relative, data in case.files.items():
        target = (home / relative).resolve()
        if not target.is_relative_to(home.resolve()) or ".git" in Path(relative).parts:
            raise SuiteRefused(f"{case.folder}/files/{relative}: a file outside the case's files/ folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    _git(home, "init", "-q", "-b", "main")
    _git(home, "add", "-A")
    _git(home, *AUTHOR, "commit", "-q", "--allow-empty", "--no-verify", "-m", f"eval case {case.name}: files/")
    commit = _git(home, "rev-parse", "HEAD").strip()
    return Source(
        location=str(home),
        shown=f"{case.folder}/files",
        commit=commit,
        ref="main",
        recipes_repo=False,
        note="" if case.files else f"{case.name} has no files/: its working copy starts empty",
    )


def case_copy_remove(suite_id: int, name: str) -> None:
    shutil.rmtree(Path(settings.DATA_DIR) / "evals" / f"suite-{suite_id}" / name, ignore_errors=True)


def _git(where: Path, *args: str) -> str:
    env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True, env=env)
    return done.stdout
