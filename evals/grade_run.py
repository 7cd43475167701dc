"""Grading a case when its run ends (docs/evals.md, "Running a suite"): the assertions checked
against what the run did, then the rubric (judge.md) asked as ONE budgeted judge call, and when
every case is graded, the suite settled and announced.

A case is graded once: its claim is a conditional update (pending -> grading), so two workers
that both get the task cannot both grade it; a worker lost mid-grade leaves it in `grading`,
which `--result` (suite_regrade) grades again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from functools import partial

from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone
from django_q.tasks import async_task

from agents.ports import ModelError, ModelPort, ModelRequest
from agents.providers import model_for
from agents.scripted import ScriptError
from budgets.guard import input_bound
from evals.copies import case_copy_remove
from evals.format import Case
from evals.grading import Evidence, Failure, grade
from evals.models import CaseResult, CaseState, Suite, SuiteState
from evals.reading import case_of
from evals.rubric import RUBRIC_MAX_TOKENS, RUBRIC_SYSTEM, rubric_bound, rubric_messages
from evals.signals import eval_failed, suite_finished
from runs.engine import finish_run
from runs.engine import verdicts as judging
from runs.engine.call import DirectReservation, Held, budgeted_call, call_size, counted_bound
from runs.models import LedgerEntry, PassStop, Phase, Run, RunState
from runs.states import Control
from spend import quotas

log = logging.getLogger(__name__)
GRADE_FUNC = "evals.tasks.grade_case"  # the worker's entry point, queued by path
PURPOSE = "rubric"
CALL_SECONDS = 300
LOST_SECONDS = 2 * CALL_SECONDS  # a grading takes at most one rubric call and the reads around it
OPEN_STATES = (CaseState.PENDING, CaseState.GRADING)
EVAL_ENDED = "eval case ended: paused"  # the cause of an eval run that paused (a pause ends the case)


def enqueue_grade(case_id: int) -> None:
    async_task(GRADE_FUNC, case_id, task_name=f"eval-case-{case_id}", group="evals")


# -- the run's end ---------------------------------------------------------------------------------


def case_run_ended(run: Run) -> None:
    """runs' run_finished: the case whose run it is gets graded (after this commits)."""
    ids = list(CaseResult.objects.filter(run=run, state=CaseState.PENDING).values_list("pk", flat=True))
    for case_id in ids:
        transaction.on_commit(lambda case_id=case_id: enqueue_grade(case_id))


def case_run_paused(run: Run, reason: str) -> None:
    """runs' run_paused: an eval run that pauses (its budget, a step cap, a quota, a cancel) ends
    its case; nobody is there to continue it. Finished here so its end is graded like any."""
    if not CaseResult.objects.filter(run=run, state=CaseState.PENDING).exists():
        return
    # paused -> finished once: a person's continue (or another receiver) meanwhile wins
    if Run.objects.filter(pk=run.pk, state=RunState.PAUSED).update(control=Control.STOP) != 1:
        return
    run.refresh_from_db()
    finish_run(run, f"{EVAL_ENDED}({reason})")


def cases_sweep_lost(*, now=None) -> list[str]:
    """The every-minute sweeper's share (runs.worker.EXTRA_SWEEPS): a case whose grader was lost
    (grading longer than its rubric call could take) is graded again; a case whose run ended
    long ago with no grading queued (the enqueue was lost) gets it queued."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=LOST_SECONDS)
    said = []
    for case_id in CaseResult.objects.filter(state=CaseState.GRADING, ended_at__lt=cutoff).values_list("pk", flat=True):
        if CaseResult.objects.filter(pk=case_id, state=CaseState.GRADING, ended_at__lt=cutoff).update(
            state=CaseState.PENDING
        ):
            enqueue_grade(case_id)
            said.append(f"eval case #{case_id}: its grading was lost; graded again")
    from django_q.brokers import get_broker  # the broker is configured only once Django is set up

    if get_broker().queue_size():
        return said  # a grading task still waiting there may be theirs
    stranded = CaseResult.objects.filter(
        state=CaseState.PENDING, run__state=RunState.FINISHED, run__ended_at__lt=cutoff
    ).values_list("pk", flat=True)
    for case_id in stranded:
        enqueue_grade(case_id)  # the claim keeps a second delivery harmless
        said.append(f"eval case #{case_id}: its run ended with no grading queued; queued")
    return said


# -- grading ---------------------------------------------------------------------------------------


@dataclass
class Graded:
    failures: list[Failure]
    verdict: str = ""
    reason: str = ""
    cause: str = ""
    error: bool = False


def grade_case(case_id: int, *, model: ModelPort | None = None, case: Case | None = None) -> CaseResult | None:
    """Grade one case whose run ended; None when another worker has it (or it was graded)."""
    # pending -> grading once (its claim time in ended_at until it is stored): a second worker leaves
    if (
        CaseResult.objects.filter(pk=case_id, state=CaseState.PENDING).update(
            state=CaseState.GRADING, ended_at=timezone.now()
        )
        != 1
    ):
        return None
    result = CaseResult.objects.select_related("suite", "run").get(pk=case_id)
    try:
        if case is None:
            case = case_of(result.suite, result.name)
        graded = grade_result(result, case, model=model)
    except Exception as exc:  # the case lands with what went wrong, the others go on
        log.exception("grading case %s failed", case_id)
        graded = Graded([], cause=f"grading failed: {type(exc).__name__}: {exc}", error=True)
    store(result, graded)
    case_copy_remove(result.suite_id, result.name)  # its run's own copy holds what it did
    suite_settle(result.suite_id)
    result.refresh_from_db()
    return result


def grade_result(result: CaseResult, case: Case | None, *, model: ModelPort | None = None) -> Graded:
    """The assertions and the rubric of `case` over what `result`'s run did (nothing stored)."""
    from evals.evidence import evidence_of  # helper A's reader of a run (imported once it exists)

    run = result.run
    if run is None:
        return Graded([], cause="its run is gone", error=True)
    if case is None:
        return Graded([], cause=f"the case {result.name} is no longer in {result.suite.target}", error=True)
    if case.broken:
        return Graded([], cause="\n".join(str(e) for e in case.errors), error=True)
    if run.cause.startswith("error"):
        return Graded([], cause=f"run #{run.pk} ended with {run.cause}", error=True)
    evidence = evidence_of(run)
    failures = list(grade(case.expect, evidence))
    graded = Graded(failures, cause=_run_cause(run))
    if case.rubric is not None:
        ask_rubric(result, run, case.rubric, evidence, graded, model=model)
    return graded


def _run_cause(run: Run) -> str:
    return "" if run.cause in ("fulfilled", "done") else f"run #{run.pk}: {run.cause}"


def ended_by_budget(run: Run | None) -> bool:
    """The run was ended by its budget before it could finish (the suite's ceiling, exit 3)."""
    if run is None or run.cause == "fulfilled":
        return False
    if run.cause == "budget exhausted" or run.cause.startswith(f"{EVAL_ENDED}(budget"):
        return True
    last = run.passes.order_by("-number").first()
    return last is not None and PassStop.TOKENS in (last.task_stop, last.wrap_up_stop) and run.cause != "fulfilled"


def store(result: CaseResult, graded: Graded) -> None:
    tokens, cost = case_spend(result.run_id)
    if graded.error:
        state = CaseState.ERROR
    elif graded.failures or graded.verdict == "NO":
        state = CaseState.FAILED
    else:
        state = CaseState.PASSED
    CaseResult.objects.filter(pk=result.pk).update(
        state=state,
        failures=[f.row() for f in graded.failures],
        rubric_verdict=graded.verdict,
        rubric_reason=graded.reason,
        cause=graded.cause,
        tokens=tokens,
        cost=cost,
        ended_at=timezone.now(),
    )


def case_spend(run_id: int | None) -> tuple[int, Decimal | None]:
    """What the ledger counted for a case: its run's calls and its rubric calls."""
    if run_id is None:
        return 0, None
    entries = LedgerEntry.objects.filter(run_id=run_id)
    sums = entries.aggregate(tokens=Sum("counted_tokens"), cost=Sum("cost"), calls=Count("id"))
    if not sums["calls"]:
        return 0, Decimal(0)  # no call was made: nothing spent (not "unpriced")
    return sums["tokens"] or 0, sums["cost"]


# -- the rubric: one budgeted judge call -------------------------------------------------------------


def ask_rubric(
    result: CaseResult, run: Run, rubric: str, evidence: Evidence, graded: Graded, *, model: ModelPort | None
) -> None:
    """The rubric asked only when its worst case (input bound + max_tokens) fits what the case's
    share of the ceiling has left; counted in the ledger on the case's run, charged to the suite's
    person (their quotas count it), settled at the real usage."""
    messages = rubric_messages(rubric, evidence)
    spent, _ = case_spend(run.pk)
    left = result.worst_tokens - spent
    bound = min(rubric_bound(rubric), input_bound(system=RUBRIC_SYSTEM, tools=[], messages=messages, last=None))
    try:
        model = model or model_for(run)
    except (ScriptError, OSError) as exc:
        graded.failures.append(Failure("rubric", f"the judge model cannot be reached: {exc}"))
        return
    # the byte bound that does not fit at all is counted exactly: it may
    count = partial(counted_bound, model, _request(run, messages, RUBRIC_MAX_TOKENS), bound)
    sized = call_size(bound, left=left, ceiling=RUBRIC_MAX_TOKENS, count=count, eager=False)
    if sized.max_tokens is None:
        graded.failures.append(
            Failure(
                "rubric",
                f"not asked: its call needs up to {sized.bound:,} tokens and more for the answer, and the case's "
                f"share of the suite's ceiling has {max(left, 0):,} left",
            )
        )
        return
    reservation = DirectReservation(model=run.judge_model, target=run.target, user_id=result.suite.user_id)
    try:
        called = budgeted_call(
            model=model,
            request=lambda max_tokens, _started: _request(run, messages, max_tokens),
            label="rubric",
            sized=sized,
            count=count,
            reservation=reservation,
        )
    except quotas.QuotaRefused as refused:
        graded.failures.append(Failure("rubric", f"not asked: quota: {refused}"))
        return
    except ModelError as exc:
        graded.failures.append(Failure("rubric", f"the judge failed: {exc}"))
        return
    reply = called.reply
    verdict = judging.parse_verdict(reply.text)
    _settle(run, reply.usage, called.held, reservation)
    graded.verdict, graded.reason = verdict.label, verdict.reason
    if not verdict.fulfilled:
        graded.failures.append(Failure("rubric", f"the judge said NO: {verdict.reason}"))


def _request(run: Run, messages: list, max_tokens: int) -> ModelRequest:
    return ModelRequest(
        model=run.judge_model,
        system=RUBRIC_SYSTEM,
        messages=messages,
        tools=[],
        max_tokens=max_tokens,
        deadline=time.monotonic() + CALL_SECONDS,
        purpose=Phase.JUDGING,  # the scripted model answers it with the script's judge reply
        pass_number=max(run.pass_number, 1),
    )


def _settle(run: Run, usage, held: Held, reservation: DirectReservation) -> None:
    with transaction.atomic():
        reservation.settle(held, usage, purpose=PURPOSE, run=run, pass_number=max(run.pass_number, 1))


# -- the suite's end -----------------------------------------------------------------------------------


def suite_settle(suite_id: int) -> bool:
    """When no case is left to grade: the suite's state, spend and end, and its signals (once)."""
    if CaseResult.objects.filter(suite_id=suite_id, state__in=OPEN_STATES).exists():
        return False
    cases = list(CaseResult.objects.filter(suite_id=suite_id).select_related("run"))
    tokens = sum(c.tokens for c in cases)
    costs = [c.cost for c in cases if c.run_id]
    cost = None if any(c is None for c in costs) else sum(costs, Decimal(0))
    ceiling = any(ended_by_budget(c.run) for c in cases if c.state != CaseState.BROKEN)
    now = timezone.now()
    fields = {"tokens_counted": tokens, "cost": cost, "graded_at": now}
    # running -> done|ceiling once: the last two cases graded at once cannot both announce it
    claimed = Suite.objects.filter(pk=suite_id, state=SuiteState.RUNNING).update(
        state=SuiteState.CEILING if ceiling else SuiteState.DONE, ended_at=now, **fields
    )
    if claimed != 1:
        Suite.objects.filter(pk=suite_id).update(**fields)  # a regrade: the figures move, no new end
        return False
    suite = Suite.objects.get(pk=suite_id)
    failed = any(c.state in (CaseState.FAILED, CaseState.ERROR) for c in cases)
    transaction.on_commit(lambda: _announce(suite, failed))
    return True


def _announce(suite: Suite, failed: bool) -> None:
    suite_finished.send(sender=Suite, suite=suite)
    if failed:
        eval_failed.send(sender=Suite, suite=suite)
