"""OpenTelemetry traces of every run (rysh_site/tracing.py, docs/tracing.md), read from the SDK's
in-memory exporter: one trace per run, the GenAI conventions' attributes, no content unless
capture is on, and a paused run continued by a second worker session in the same trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from django.db import OperationalError
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agents.anthropic_model import AnthropicModel
from agents.ports import ModelError, ModelRequest
from budgets.plan import Grant as PlanGrant
from runs import services
from runs.models import Run, Step
from rysh_site import tracing
from spend.services import quota_set
from tests.agents.test_anthropic_model import KEY
from tests.conftest import ONE_PASS, drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import FakeAnthropic
from tests.runs.test_approvals import GATED, PUBLISH_THEN_DONE, Person, Tools, drive_with
from tests.runs.test_engine import LOOP, SAVE
from tests.spend.test_quotas import TASK, greedy

pytestmark = pytest.mark.django_db

SECRET_WORDS = "entry entry"  # what the fake model saves: content, never on a span by default
STEP_CAP = """
    ---
    loop:
      do:
        interval: 2
        auto_continue: false
    ---
    Work on the secret plan.
"""


@pytest.fixture
def spans(settings):
    settings.RYSH_TRACES = True
    settings.RYSH_TRACES_CAPTURE_CONTENT = False
    exporter = InMemorySpanExporter()
    tracing.install(exporter, batch=False)
    return exporter


def landing_model() -> FakeModel:
    """Pass 1: a tool call, a budget stop, the wrap-up, judged NO; pass 2 done, judged YES (the
    scenario of tests/runs/test_engine.py's takeover test)."""
    model = FakeModel(
        task=[{"text": "burning", "tools": [SAVE]}, {"text": "more", "tools": [tool("list_results")]}],
        wrap_up=[
            {"text": "landing", "tools": [tool("save_result", filename="list.md", content="PARTIAL list")]},
            {"text": "Saved PARTIAL."},
        ],
        judge=["NO\nOnly three entries.", "YES\nFive entries."],
    )
    original = model.complete

    def complete(request):
        if request.pass_number == 2 and request.purpose == "task":
            model.turns["task"] = [{"text": "Done, five entries."}]
        return original(request)

    model.complete = complete
    return model


def by_name(finished, prefix):
    return [s for s in finished if s.name.startswith(prefix)]


def test_a_run_is_one_trace_of_passes_model_calls_tools_and_the_judge(start, spans):
    run = drive(start(LOOP, "agent loops"), landing_model())
    assert run.cause == "fulfilled"
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1

    [root] = by_name(finished, "invoke_workflow ")
    assert root.parent is None and root.name == "invoke_workflow job"
    assert f"{root.context.trace_id:032x}-{root.context.span_id:016x}" in run.trace_context["traceparent"]
    assert root.start_time == tracing._ns(run.created_at) and root.end_time == tracing._ns(run.ended_at)
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["rysh.run.cause"] == "fulfilled" and root.attributes["rysh.run.passes"] == 2
    assert {"rysh.queued", "rysh.running", "rysh.finished"} <= {e.name for e in root.events}

    passes = by_name(finished, "invoke_agent ")
    assert [p.attributes["rysh.pass.number"] for p in passes] == [1, 2]
    for one in passes:
        assert one.parent.span_id == root.context.span_id
        assert one.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert one.attributes["gen_ai.agent.name"] == "job"
        assert one.attributes["gen_ai.provider.name"] == "fake"
    first = passes[0]
    assert [e.name for e in first.events][:1] == ["rysh.pass.started"]
    assert "rysh.wrap-up" in [e.name for e in first.events]
    wrap_up = next(e for e in first.events if e.name == "rysh.wrap-up")
    assert wrap_up.attributes["rysh.leg.stop"] == "tokens"

    # every model call: a chat span under its pass (the judge's under its judge span), its usage
    # that of the step the run recorded
    chats = by_name(finished, "chat ")
    steps = list(Step.objects.filter(run_pass__run=run).order_by("created_at", "id"))
    assert len(chats) == len(steps) > 4
    for chat, step in zip(sorted(chats, key=lambda s: s.start_time), steps, strict=True):
        a = chat.attributes
        assert chat.name == f"chat {step.model}" and a["gen_ai.request.model"] == step.model
        assert a["rysh.leg"] == step.leg and a["gen_ai.request.max_tokens"] == step.max_tokens
        assert a["gen_ai.usage.output_tokens"] == step.output_tokens
        assert a["gen_ai.usage.input_tokens"] == step.input_tokens + step.cache_read_tokens + step.cache_write_tokens
        assert a["gen_ai.usage.cache_read.input_tokens"] == step.cache_read_tokens
        assert a["gen_ai.usage.cache_creation.input_tokens"] == step.cache_write_tokens
        assert a["rysh.usage.counted_tokens"] == step.counted_tokens
        assert a["gen_ai.response.finish_reasons"] == (step.stop_reason,)
    legs = {c.attributes["rysh.leg"] for c in chats}
    assert legs == {"task", "wrap-up", "judging"}

    judges = by_name(finished, "judge pass ")
    assert [j.name for j in judges] == ["judge pass 1", "judge pass 2"]
    assert [j.attributes["gen_ai.evaluation.score.label"] for j in judges] == ["NO", "YES"]
    for judge, one in zip(judges, passes, strict=True):
        assert judge.parent.span_id == one.context.span_id
        [judged] = [c for c in chats if c.parent.span_id == judge.context.span_id]
        assert judged.attributes["rysh.leg"] == "judging"
    for chat in chats:
        if chat.attributes["rysh.leg"] != "judging":
            assert chat.parent.span_id in {p.context.span_id for p in passes}

    tools = by_name(finished, "execute_tool ")
    # every call the tools port ran, in order; a call refused for going in circles never ran
    refused = {r["tool_use_id"] for s in steps for r in s.tool_results if str(r["content"]).startswith("refused:")}
    asked = [(c["name"], c["id"]) for s in steps for c in s.tool_calls]
    ran = [(t.attributes["gen_ai.tool.name"], t.attributes["gen_ai.tool.call.id"]) for t in tools]
    assert ran == [call for call in asked if call in ran] and len(ran) >= 5
    assert ran[0] == asked[0] and ran[-1] == asked[-1] and refused and not refused & {i for _, i in ran}
    for one in tools:
        assert one.parent.span_id == first.context.span_id
        assert one.attributes["gen_ai.operation.name"] == "execute_tool"
        assert one.attributes["gen_ai.tool.call.id"].startswith("toolu_")

    # content is off by default: no prompt, result, argument or verdict reason on any span
    dumped = json.dumps([json.loads(s.to_json()) for s in finished])
    assert SECRET_WORDS not in dumped and "PARTIAL list" not in dumped and "Only three entries" not in dumped
    assert "Compile a list on" not in dumped and "gen_ai.input.messages" not in dumped


def test_content_reaches_the_spans_only_when_capture_is_on(start, spans, settings):
    settings.RYSH_TRACES_CAPTURE_CONTENT = True
    drive(start(LOOP, "agent loops"), landing_model())
    finished = spans.get_finished_spans()
    first_chat = min(by_name(finished, "chat "), key=lambda s: s.start_time)
    sent = json.loads(first_chat.attributes["gen_ai.input.messages"])
    assert sent[0]["role"] == "user" and "Compile a list on agent loops." in sent[0]["parts"][0]["content"]
    answered = json.loads(first_chat.attributes["gen_ai.output.messages"])
    assert answered[0]["parts"][1]["type"] == "tool_call" and answered[0]["parts"][1]["name"] == "save_result"
    saved = by_name(finished, "execute_tool save_result")[0]
    assert json.loads(saved.attributes["gen_ai.tool.call.arguments"])["content"].startswith(SECRET_WORDS)
    assert saved.attributes["gen_ai.tool.call.result"]
    verdicts = [e for s in by_name(finished, "judge pass 1") for e in s.events if e.name == "rysh.verdict"]
    assert "Only three entries" in verdicts[0].attributes["rysh.event.message"]


def test_a_paused_run_continued_by_another_session_stays_in_one_trace(start, spans):
    run = start(STEP_CAP)
    model = FakeModel(
        task=[{"text": "a", "tools": [SAVE]}, {"text": "b", "tools": [SAVE]}, {"text": "Done."}], repeat_last=False
    )
    run = drive(run, model)
    assert run.state_label == "paused(step cap)"
    stored = dict(run.trace_context)
    first_session = spans.get_finished_spans()
    assert not by_name(first_session, "invoke_workflow ")  # the root waits for the run's end
    [paused_pass] = by_name(first_session, "invoke_agent ")
    assert "rysh.paused" in [e.name for e in paused_pass.events]
    assert paused_pass.attributes["rysh.pass.resumed"] is False

    services.run_continue(run=run)
    run = drive(run, model)  # a second engine session, as a new worker would run it
    assert run.cause == "done"
    run.refresh_from_db()
    assert run.trace_context == stored
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    [root] = by_name(finished, "invoke_workflow ")
    passes = by_name(finished, "invoke_agent ")
    assert len(passes) == 2 and passes[1].attributes["rysh.pass.resumed"] is True
    assert {p.parent.span_id for p in passes} == {root.context.span_id}
    assert [e.name for e in root.events].count("rysh.continued") == 1
    assert [e.name for e in root.events].count("rysh.paused") == 1


def test_a_failed_model_call_is_an_error_span_and_the_run_ends_in_error(start, spans):
    run = drive(start(LOOP, "x"), FakeModel(task=[ModelError("overloaded, gave up after 5 attempts")]))
    assert run.cause.startswith("error")
    finished = spans.get_finished_spans()
    [chat] = by_name(finished, "chat ")
    assert chat.status.status_code == StatusCode.ERROR and chat.attributes["error.type"] == "ModelError"
    [root] = by_name(finished, "invoke_workflow ")
    assert root.status.status_code == StatusCode.ERROR and root.attributes["error.type"] == "run_error"


def test_a_granted_run_goes_on_under_a_segment_of_the_same_trace(start, spans):
    run = drive(start(LOOP, "x"), FakeModel(task=[{"text": "Done."}], judge=["NO\nnot yet"]))
    assert run.cause.startswith("unfulfilled")
    first_root = by_name(spans.get_finished_spans(), "invoke_workflow ")[0]
    services.run_grant(run=run, extra=PlanGrant(passes=1))
    run = drive(Run.objects.get(pk=run.pk), FakeModel(task=[{"text": "Done."}], judge=["YES\nok"] * 4))
    roots = by_name(spans.get_finished_spans(), "invoke_workflow ")
    assert len(roots) == 2 and roots[1].parent.span_id == first_root.context.span_id
    assert roots[1].context.trace_id == first_root.context.trace_id
    assert roots[1].attributes["rysh.run.granted"] is True


def test_nothing_is_traced_or_stored_when_tracing_is_off(start, settings):
    settings.RYSH_TRACES = False
    exporter = InMemorySpanExporter()
    tracing.install(exporter, batch=False)
    run = drive(start(LOOP, "x"), landing_model())
    assert run.cause == "fulfilled" and run.trace_context == {}
    assert exporter.get_finished_spans() == ()


def test_a_real_anthropic_call_is_a_chat_span_with_its_retries_and_cache_usage(start, spans):
    """The real SDK against the fake Anthropic server: two failed attempts are events on the span,
    and the convention's input tokens count cache reads and writes as Anthropic's do not."""
    run = start(LOOP, "x")
    with FakeAnthropic() as fake:
        model = AnthropicModel(api_key=KEY, base_url=fake.base_url, backoff_seconds=0.01)
        fake.reply(text="first", output_tokens=7)
        tracing.chat(run, model, anthropic_request())
        fake.fail_next(500, times=2)
        messages = [
            {"role": "user", "content": "Find five sources."},
            {"role": "assistant", "content": [{"type": "text", "text": "first"}]},
            {"role": "user", "content": "continue"},
        ]
        usage = tracing.chat(run, model, anthropic_request(messages=messages)).usage
    first, second = spans.get_finished_spans()
    assert second.name == "chat claude-fake-1" and second.attributes["gen_ai.provider.name"] == "anthropic"
    assert [e.name for e in second.events] == ["rysh.model.retry", "rysh.model.retry"]
    assert second.events[0].attributes["rysh.retry.cause"] and second.attributes["rysh.model.retries"] == 2
    assert "rysh.model.retries" not in first.attributes
    assert usage.cache_read_tokens > 0 and usage.cache_write_tokens > 0
    a = second.attributes
    assert a["gen_ai.usage.cache_read.input_tokens"] == usage.cache_read_tokens
    assert a["gen_ai.usage.cache_creation.input_tokens"] == usage.cache_write_tokens
    assert a["gen_ai.usage.input_tokens"] == usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    assert KEY not in json.dumps([json.loads(s.to_json()) for s in (first, second)])


def anthropic_request(**overrides) -> ModelRequest:
    fields = dict(
        model="claude-fake-1",
        system="You are careful.",
        tools=[],
        messages=[{"role": "user", "content": "Find five sources."}],
        max_tokens=1000,
        deadline=time.monotonic() + 10,
    )
    return ModelRequest(**(fields | overrides))


@pytest.mark.parametrize(
    ("env", "traces", "content"),
    [
        ({}, False, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True, False),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "TRUE"}, False, False),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318",
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            },
            True,
            True,
        ),
    ],
)
def test_traces_are_off_unless_an_otlp_endpoint_is_set(env, traces, content):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = "from django.conf import settings; print(settings.RYSH_TRACES, settings.RYSH_TRACES_CAPTURE_CONTENT)"
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env={**clean, "DJANGO_SETTINGS_MODULE": "rysh_site.settings_test", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == [str(traces), str(content)]


@pytest.mark.django_db(transaction=True)
def test_an_approval_wait_is_events_on_the_pass_and_its_text_only_with_capture(start, spans):
    run = drive_with(start(GATED), FakeModel(task=PUBLISH_THEN_DONE), Tools(), Person(approved=True, delay=0.3))
    assert run.cause == "done"
    finished = spans.get_finished_spans()
    [one_pass] = by_name(finished, "invoke_agent ")
    events = {e.name: e for e in one_pass.events}
    assert events["rysh.approval.requested"].attributes["rysh.approval.id"] > 0
    assert events["rysh.approval.answered"].attributes["rysh.approval.state"] == "approved"
    assert "rysh.event.message" not in events["rysh.approval.requested"].attributes  # the action: content
    [published] = by_name(finished, "execute_tool publish")
    assert published.parent.span_id == one_pass.context.span_id
    assert published.start_time > events["rysh.approval.answered"].timestamp


def test_a_quota_wait_is_a_pause_event_and_a_stop_from_the_page_sends_the_run_span(start, spans):
    quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    run = drive(start(TASK), greedy())
    assert run.state_label == "paused(quota: installation)"
    [one_pass] = by_name(spans.get_finished_spans(), "invoke_agent ")
    [paused] = [e for e in one_pass.events if e.name == "rysh.paused"]
    assert paused.attributes["rysh.pause.reason"] == "quota: installation"
    assert paused.attributes["rysh.quota.need_tokens"] > 0
    services.run_stop(run=run)  # a paused run stops at once: its root span is sent from here
    [root] = by_name(spans.get_finished_spans(), "invoke_workflow ")
    assert root.attributes["rysh.run.cause"] == "stopped by user"
    assert [e.name for e in root.events][-2:] == ["rysh.paused", "rysh.finished"]
    assert one_pass.parent.span_id == root.context.span_id


def test_a_run_taken_over_from_a_lost_worker_stays_in_one_trace(start, spans):
    run = start(ONE_PASS)
    dying = FakeModel(task=[{"text": "a", "tools": [SAVE]}, OperationalError("the database went away")])
    with pytest.raises(OperationalError):
        drive(run, dying)  # the worker loses its database mid-pass: the run stays `running`
    [lost] = by_name(spans.get_finished_spans(), "invoke_agent ")
    assert lost.status.status_code == StatusCode.ERROR and lost.attributes["error.type"] == "OperationalError"
    Run.objects.filter(pk=run.pk).update(heartbeat_at=None)
    assert services.runs_sweep_lost()[0].endswith("continued from its checkpoint")
    run = drive(Run.objects.get(pk=run.pk), FakeModel(task=[{"text": "Done."}]))
    assert run.cause == "done"
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    [root] = by_name(finished, "invoke_workflow ")
    first, second = by_name(finished, "invoke_agent ")
    assert first.attributes["rysh.pass.number"] == second.attributes["rysh.pass.number"] == 1
    assert second.attributes["rysh.pass.resumed"] is True
    assert first.parent.span_id == second.parent.span_id == root.context.span_id
    paused = [e for e in root.events if e.name == "rysh.paused"]
    assert paused[0].attributes["rysh.pause.reason"] == "worker lost"
    assert "rysh.continued" in [e.name for e in root.events]
