"""Starting, grading and re-grading suites (docs/evals.md). Keyword-only `<entity>_<action>`."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.services import audit_record
from evals.grade_run import Graded, grade_result, store, suite_settle
from evals.launch import refuse_over_quota, refuse_unless_allowed, start_suite
from evals.models import CaseResult, CaseState, Suite, SuiteSide, SuiteState
from evals.planning import plan_of, read_path, read_target
from evals.reading import suite_read
from evals.rubric import rubric_worst
from evals.shapes import PlannedCase, SuitePlan, SuiteRefused
from runs.states import RunState
from spend.prices import micros_per_token

__all__ = ["PlannedCase", "SuitePlan", "SuiteRefused"]


def suite_plan(
    *, target: str | None = None, path: str | None = None, side: str = "main", change=None, case: str | None = None
) -> SuitePlan:
    """The plan of a suite of `target` (kind/name in the catalogue) on `side` ("main": the tracked
    branch; "change": `change`'s review branch), or of the folder `path` (rysh's layout). `case`:
    only that case. Raises SuiteRefused."""
    if path is not None:
        read = read_path(path)
        shown = f"{read.kind}/{Path(read.path).stem}"
        plan = plan_of(read, target=shown, side=SuiteSide.PATH, only=case)
    else:
        if target is None and change is not None:
            target = change.target
        if not target or "/" not in target:
            raise SuiteRefused(f"expected a recipe as kind/name (task/fix-the-test), got {target!r}")
        if side not in (SuiteSide.MAIN, SuiteSide.CHANGE):
            raise SuiteRefused(f"side: expected main or change, got {side!r}")
        read = read_target(target, side=side, change=change)
        plan = plan_of(read, target=target, side=side, only=case)
    plan.read = read
    return plan


def suite_start(
    *,
    user,
    target: str | None = None,
    path: str | None = None,
    side: str = "main",
    change=None,
    case: str | None = None,
    provider: str | None = None,
) -> Suite:
    """Check the plan against the quotas (the whole ceiling must fit what they leave), record it
    in the audit log, and queue every case's run. Raises SuiteRefused before anything is spent."""
    refuse_unless_allowed(user)
    plan = suite_plan(target=target, path=path, side=side, change=change, case=case)
    return start_suite(user=user, plan=plan, read=plan.read, side=plan.side, change=change, provider=provider)


def change_suites_start(*, change, user, provider: str | None = None) -> tuple[Suite, Suite]:
    """The Evals panel's button: the cases on main and on the change, side by side. Both ceilings
    together must fit what the quotas leave."""
    refuse_unless_allowed(user)
    main = suite_plan(target=change.target, side=SuiteSide.MAIN, change=change)
    proposed = suite_plan(target=change.target, side=SuiteSide.CHANGE, change=change)
    both = SuitePlan(target=change.target, side="both", commit_sha="", recipe_text="")
    both.budget_tokens = main.budget_tokens + proposed.budget_tokens
    both.money = None if None in (main.money, proposed.money) else main.money + proposed.money
    person = user if getattr(user, "is_authenticated", False) else None
    refuse_over_quota(both, target=change.target, user_id=person.pk if person else None)
    first = start_suite(user=user, plan=main, read=main.read, side=SuiteSide.MAIN, change=change, provider=provider)
    second = start_suite(
        user=user, plan=proposed, read=proposed.read, side=SuiteSide.CHANGE, change=change, provider=provider
    )
    return first, second


def suite_regrade(*, suite: Suite, user=None) -> Suite:
    """`--result`: the recorded runs of `suite` checked again against the current expect.yaml
    (free) and judge.md (judge calls only, under their own bound)."""
    refuse_unless_allowed(user)
    now = suite_read(suite, now=True)
    current = {c.name: c for c in now.cases}
    results = [
        r
        for r in suite.cases.select_related("run", "suite")
        if r.run_id and r.state != CaseState.PENDING and r.run.state == RunState.FINISHED
    ]
    if not results:
        raise SuiteRefused(f"suite #{suite.pk} has no recorded run to grade again")
    extra = {r.pk: rubric_worst(current[r.name].rubric) if r.name in current else 0 for r in results}
    rubrics = SuitePlan(target=suite.target, side=suite.side, commit_sha="", recipe_text="")
    rubrics.budget_tokens = sum(extra.values())
    rubrics.money = None if rubrics.budget_tokens else 0
    person = user if getattr(user, "is_authenticated", False) else None
    if rubrics.budget_tokens:
        _money_of_rubrics(rubrics, results)
        refuse_over_quota(rubrics, target=_quota_target(suite, results), user_id=suite.user_id)
    audit_record(
        actor=person,
        action="eval.regrade",
        target=suite,
        detail={"cases": [r.name for r in results], "rubric_budget_tokens": rubrics.budget_tokens},
    )
    for result in results:
        with transaction.atomic():
            # each case's share grows by its rubric call's bound: the ceiling grows by the same
            CaseResult.objects.filter(pk=result.pk).update(
                state=CaseState.GRADING, worst_tokens=result.worst_tokens + extra[result.pk]
            )
            Suite.objects.filter(pk=suite.pk).update(budget_tokens=F("budget_tokens") + extra[result.pk])
        result.refresh_from_db()
        try:
            graded = grade_result(result, current.get(result.name))
        except Exception as exc:  # noqa: BLE001 (a case lands with its cause, the rest go on)
            graded = Graded([], cause=f"grading failed: {type(exc).__name__}: {exc}", error=True)
        store(result, graded)
    suite_settle(suite.pk)
    Suite.objects.filter(pk=suite.pk).update(graded_at=timezone.now())
    suite.refresh_from_db()
    return suite


def _quota_target(suite: Suite, results) -> str:
    return results[0].run.target if results and results[0].run else suite.target


def _money_of_rubrics(plan: SuitePlan, results) -> None:
    model = results[0].run.judge_model
    rate = micros_per_token(model, plan.budget_tokens)
    plan.money = None if rate is None else Decimal(plan.budget_tokens) * rate / 1_000_000


def suite_exit_code(suite: Suite) -> int:
    """rysh's: 0 all passed, 1 a case failed, 3 the suite's ceiling ended it (2 is a refusal, or a
    broken case listed with its error)."""
    states = set(suite.cases.values_list("state", flat=True))
    if suite.state == SuiteState.CEILING:
        return 3
    if states & {CaseState.FAILED, CaseState.ERROR, CaseState.PENDING, CaseState.GRADING}:
        return 1
    if CaseState.BROKEN in states:
        return 2
    return 0


def suite_last(*, target: str) -> Suite | None:
    """The newest suite of a recipe (kind/name) or of a folder (its path as given to `auto eval`)."""
    return Suite.objects.filter(target=target).order_by("-created_at", "-id").first()
