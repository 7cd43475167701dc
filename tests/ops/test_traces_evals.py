"""An eval suite is a trace whose case runs are children (rysh_site/tracing.py, docs/tracing.md,
docs/evals.md): the suite's context stored when it starts, each case's run started under it
(`run_start(trace_parent=…)`), the suite's span emitted once its cases are graded; nothing
stored when tracing is off."""

from __future__ import annotations

import pytest
from django.utils import timezone

from evals.models import CaseResult, CaseState, Suite, SuiteState
from evals.signals import suite_finished
from rysh_site import tracing
from tests.conftest import ONE_PASS, drive
from tests.fake_model import FakeModel, tool
from tests.ops.test_traces import by_name, spans  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def saving_model() -> FakeModel:
    return FakeModel(
        task=[
            {"text": "saving", "tools": [tool("save_result", filename="summary.md", content="the summary")]},
            {"text": "All saved."},
        ]
    )


def graded(suite: Suite, runs: list, states: list[str]) -> Suite:
    for number, (run, state) in enumerate(zip(runs, states, strict=True), 1):
        CaseResult.objects.create(
            suite=suite,
            name=f"case-{number}",
            folder=f"tasks/job/evals/case-{number}",
            run=run,
            state=state,
            tokens=run.tokens_counted,
            ended_at=run.ended_at,
        )
    Suite.objects.filter(pk=suite.pk).update(
        state=SuiteState.DONE, ended_at=timezone.now(), graded_at=timezone.now(), tokens_counted=123
    )
    suite.refresh_from_db()
    return suite


def test_a_suite_is_one_trace_whose_case_runs_are_children(start, spans, django_capture_on_commit_callbacks):  # noqa: F811
    suite = Suite.objects.create(target="task/job", side="main", budget_tokens=1000)
    stored = tracing.suite_context(suite)
    suite.refresh_from_db()
    assert stored["traceparent"] and suite.trace_context == stored

    runs = [drive(start(ONE_PASS, trace_parent=suite.trace_context), saving_model()) for _ in range(2)]
    suite = graded(suite, runs, [CaseState.PASSED, CaseState.FAILED])
    with django_capture_on_commit_callbacks(execute=True):
        suite_finished.send(sender=Suite, suite=suite)

    finished = spans.get_finished_spans()
    [top] = by_name(finished, "invoke_workflow evals ")
    assert top.name == "invoke_workflow evals task/job" and top.parent is None
    assert f"{top.context.trace_id:032x}-{top.context.span_id:016x}" in suite.trace_context["traceparent"]
    assert top.attributes["rysh.suite.id"] == suite.pk and top.attributes["rysh.suite.cases"] == 2
    assert (top.attributes["rysh.suite.passed"], top.attributes["rysh.suite.failed"]) == (1, 1)
    assert top.start_time == tracing._ns(suite.created_at) and top.end_time == tracing._ns(suite.graded_at)
    assert [e.attributes["rysh.run.id"] for e in top.events] == [r.pk for r in runs]
    assert top.status.is_ok  # a failed assertion is the suite's outcome, not an error of it

    roots = [s for s in finished if s.name == "invoke_workflow job"]
    assert len(roots) == 2
    for root in roots:
        assert root.parent.span_id == top.context.span_id and root.context.trace_id == top.context.trace_id
        assert root.attributes["rysh.run.granted"] is False
    assert {s.context.trace_id for s in finished} == {top.context.trace_id}  # every pass and call too
    assert len(by_name(finished, "invoke_agent ")) == 2

    # graded again (`--result`): the suite's span is not emitted twice
    suite.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        suite_finished.send(sender=Suite, suite=suite)
    assert len(by_name(spans.get_finished_spans(), "invoke_workflow evals ")) == 1


def test_a_ceiling_or_an_errored_case_marks_the_suites_span(start, spans, django_capture_on_commit_callbacks):  # noqa: F811
    suite = Suite.objects.create(target="task/job", side="main")
    tracing.suite_context(suite)
    run = drive(start(ONE_PASS, trace_parent=suite.trace_context), saving_model())
    suite = graded(suite, [run], [CaseState.ERROR])
    Suite.objects.filter(pk=suite.pk).update(state=SuiteState.CEILING)
    suite.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        suite_finished.send(sender=Suite, suite=suite)
    [top] = by_name(spans.get_finished_spans(), "invoke_workflow evals ")
    assert top.attributes["error.type"] == "ceiling" and not top.status.is_ok


def test_with_tracing_off_nothing_is_stored_and_runs_start_untraced(start, settings):
    settings.RYSH_TRACES = False
    suite = Suite.objects.create(target="task/job", side="main")
    assert tracing.suite_context(suite) == {}
    suite.refresh_from_db()
    assert suite.trace_context == {}
    run = start(ONE_PASS, trace_parent=suite.trace_context)
    assert run.trace_context == {}


def test_a_run_without_a_parent_is_its_own_trace(start, spans):  # noqa: F811
    run = drive(start(ONE_PASS), saving_model())
    [root] = by_name(spans.get_finished_spans(), "invoke_workflow job")
    assert root.parent is None and "of" not in run.trace_context
