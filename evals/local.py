"""A suite driven in this process (docs/evals.md, "Running a suite"): what `auto eval` does when
no worker cluster is running — the embedded default from the command line — and what the
tests use. Each case's run is executed here one after the other, then graded."""

from __future__ import annotations

from evals.grade_run import grade_case, suite_settle
from evals.models import CaseResult, CaseState, Suite
from runs.models import RunState
from runs.wiring import arm_run
from runs.worker import execute


def suite_drive_here(suite: Suite, *, armed_for=arm_run) -> Suite:
    """Execute every queued case run of `suite` here, then grade the cases whose run ended."""
    for result in suite.cases.filter(state=CaseState.PENDING, run__state=RunState.QUEUED).select_related("run"):
        execute(result.run_id, armed_for)
    for case_id in CaseResult.objects.filter(suite=suite, state=CaseState.PENDING).values_list("pk", flat=True):
        result = CaseResult.objects.select_related("run").get(pk=case_id)
        if result.run is not None and result.run.state == RunState.FINISHED:
            grade_case(case_id)
    suite_settle(suite.pk)
    suite.refresh_from_db()
    return suite
