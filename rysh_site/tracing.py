"""OpenTelemetry traces of every run (docs/tracing.md), following the OpenTelemetry GenAI semantic
conventions v0.1.0 (open-telemetry/semantic-conventions-genai).

Off unless an OTLP endpoint is configured (settings.RYSH_TRACES); the exporter reads the standard
OTEL_* variables itself. A run is one trace: its root span's ids are stored on the Run (a W3C
traceparent in `Run.trace_context`, made the first time the run is traced) and every worker
session of the run hangs its spans under it, so a continued run or one taken over from a lost
worker lands in the same trace. The root span itself cannot stay open across processes: it is
emitted when the run finishes, with the stored ids, from when the run was started (queued).

    invoke_workflow <recipe>       the run (emitted when it finishes)
      invoke_agent <recipe>        a pass, as one worker session drove it
        chat <model>               a model call (task or wrap-up leg)
        execute_tool <tool>        a tool call (a sibling of the call that asked for it)
        judge pass <n>             the judge
          chat <judge model>       its model call

An eval suite (docs/evals.md) is a trace of its own whose case runs are children: the suite's ids
are stored on Suite.trace_context when it starts, each case's run is made with its root span under
them (`child_context`), and the suite's span is emitted when its cases are graded:

    invoke_workflow evals <recipe>   the suite (emitted when graded; an event per case)
      invoke_workflow <recipe>       each case's run, as above

Wrap-up, approval waits, quota waits, pauses and controls are span events. Prompt, result and
argument text reach a span only when content capture is on
(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true); never a secret.

This module sits at the bottom of the layers: the engine calls it through one line per hook, and
it knows runs, passes and model ports only by their attributes (duck typing).
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING

from django.conf import settings
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

if TYPE_CHECKING:  # the SDK is imported by a process that traces, when it first does
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger(__name__)

SCOPE = "rysh_site.tracing"
DEFAULT_SERVICE_NAME = "rysh-dashboard"
FLUSH_MILLIS = 10_000  # how long the end of a worker's task may wait for its spans to leave
TEXT_LIMIT = 500  # characters of an event's message on a span


@dataclass(frozen=True)
class EventKinds:
    """The run event kinds a trace treats apart, by their role. The kinds are the runs app's
    (runs.states.EventKind); runs.events passes them in with each event, since this module sits
    below runs and names none of them itself."""

    # recorded on the root span when the run ends (what happens between worker sessions: a
    # person's controls, a quota wait's wake-up, a lost worker's requeue)
    on_root: tuple[str, ...]
    skipped: tuple[str, ...]  # a step is its chat span already
    content: tuple[str, ...]  # their message carries a model's or a person's text: content capture only
    pass_started: str  # a new pass: its own span
    judging: str  # the judge's span opens
    verdict: str  # ... and closes
    granted: str  # a grant starts a new segment of the trace
    finished: str  # the run's root span


EVENT_DATA = {
    "number": "rysh.pass.number",
    "reason": "rysh.pause.reason",
    "stop": "rysh.leg.stop",
    "verdict": "rysh.verdict",
    "state": "rysh.approval.state",
    "approval": "rysh.approval.id",
    "need_tokens": "rysh.quota.need_tokens",
    "quota": "rysh.quota.id",
    "model": "rysh.model",
    "cause": "rysh.run.cause",
}


def _quiet(hook):
    """A hook the engine calls: a fault in tracing is logged, never raised into the run."""

    @wraps(hook)
    def guarded(*args, **kwargs):
        try:
            return hook(*args, **kwargs)
        except Exception:
            log.warning("tracing: %s failed; the run goes on untraced there", hook.__name__, exc_info=True)
            return None

    return guarded


# -- configuration, per process ------------------------------------------------------------


class _Ids:
    """Random ids (as the SDK's RandomIdGenerator makes them; the tracer provider takes any object
    with these methods), except for the one span whose ids were chosen beforehand: a run's root
    span, emitted when the run ends with the ids its children already point at. Not the SDK's own
    class: a process that does not trace never imports the SDK (docs/benchmarks/engine.md)."""

    def __init__(self):
        self._chosen = threading.local()

    @contextmanager
    def chosen(self, trace_id: int, span_id: int):
        self._chosen.ids = (trace_id, span_id)
        try:
            yield
        finally:
            self._chosen.ids = None

    def generate_trace_id(self) -> int:
        ids = getattr(self._chosen, "ids", None)
        return ids[0] if ids else _random_id(128, trace.INVALID_TRACE_ID)

    def generate_span_id(self) -> int:
        ids = getattr(self._chosen, "ids", None)
        return ids[1] if ids else _random_id(64, trace.INVALID_SPAN_ID)

    def is_trace_id_random(self) -> bool:
        return True


def _random_id(bits: int, invalid: int) -> int:
    made = random.getrandbits(bits)
    while made == invalid:
        made = random.getrandbits(bits)
    return made


_lock = threading.Lock()
_provider: TracerProvider | None = None
_ids = _Ids()
_pid = 0


def enabled() -> bool:
    return settings.RYSH_TRACES


def capture_content() -> bool:
    return settings.RYSH_TRACES_CAPTURE_CONTENT


def install(exporter: SpanExporter, *, batch: bool = True) -> TracerProvider:
    """This process's tracer provider, exporting to `exporter` (a BatchSpanProcessor; `batch=False`
    exports each span as it ends, for the tests' in-memory exporter). The SDK is imported here:
    only a process that traces loads it."""
    # the SDK: only a process that traces loads it
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    global _provider, _pid
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider = TracerProvider(resource=_resource(), id_generator=_ids)
    provider.add_span_processor(processor)
    with _lock:
        _provider, _pid = provider, os.getpid()
    return provider


def _resource() -> Resource:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES as the SDK reads them; rysh-dashboard when
    neither names the service."""
    from opentelemetry.sdk.resources import Resource  # the SDK, as install()

    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))
    return resource


def _tracer() -> trace.Tracer:
    """The tracer of this process. A django-q2 worker is a forked process: its provider (and the
    BatchSpanProcessor's thread) is made in it, at its first span, never inherited."""
    if _provider is None or _pid != os.getpid():
        # the OTLP exporter pulls protobuf and requests in: only a process that traces imports it
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        install(OTLPSpanExporter())
    return _provider.get_tracer(SCOPE)


@_quiet
def flush() -> None:
    """Send what this process holds now (the end of a worker's task: django-q2 may recycle the
    process next)."""
    if _provider is not None and _pid == os.getpid():
        _provider.force_flush(FLUSH_MILLIS)


# -- the run's stored context ----------------------------------------------------------------


def _traceparent(trace_id: int, span_id: int) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-01"


def _ids_of(traceparent: str) -> tuple[int, int]:
    _version, trace_id, span_id, _flags = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


def _ns(moment) -> int:
    return int(moment.timestamp() * 1e9) if moment else time.time_ns()


def stored_context(run) -> dict:
    """The run's trace context ({"traceparent", "start"[, "parent"]}), made and stored the first
    time the run is traced; of two processes making it at once, the first one stored wins."""
    if (run.trace_context or {}).get("traceparent"):
        return run.trace_context
    made = {
        "traceparent": _traceparent(_ids.generate_trace_id(), _ids.generate_span_id()),
        "start": _ns(run.created_at),
    }
    unmade = type(run).objects.filter(pk=run.pk).exclude(trace_context__has_key="traceparent")
    if unmade.update(trace_context=made) == 1:
        run.trace_context = made
    else:
        run.refresh_from_db(fields=["trace_context"])
    return run.trace_context


def child_context(parent: dict | None) -> dict:
    """A new run's trace context under `parent` (an eval suite's stored context): the run's root
    span gets its own ids in the parent's trace, its parent the suite's span; {} (traced on its
    own, if at all) when the parent was not traced. runs.services.run_start(trace_parent=…)."""
    traceparent = (parent or {}).get("traceparent")
    if not traceparent:
        return {}
    trace_id, span_id = _ids_of(traceparent)
    return {
        "traceparent": _traceparent(trace_id, _ids.generate_span_id()),
        "parent": f"{span_id:016x}",
        "of": "suite",
        "start": time.time_ns(),
    }


def _remote(trace_id: int, span_id: int) -> SpanContext:
    """A span of the run's trace stored by an earlier process (or another run's, for a link)."""
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _context(trace_id: int, span_id: int) -> Context:
    return trace.set_span_in_context(NonRecordingSpan(_remote(trace_id, span_id)), Context())


def _root(run) -> Context:
    """The parent of a session's spans: the run's root span, as stored."""
    return _context(*_ids_of(stored_context(run)["traceparent"]))


# -- a worker's session of a run ---------------------------------------------------------------


@dataclass
class _Session:
    root: Context
    agent: str
    provider: str
    pass_span: Span | None = None
    pass_number: int = 0
    judge_span: Span | None = None

    def innermost(self) -> Span | None:
        return self.judge_span or self.pass_span

    def parent(self) -> Context:
        span = self.innermost()
        return trace.set_span_in_context(span, Context()) if span else self.root

    def end_judge(self, error: str = "") -> None:
        if self.judge_span is not None:
            _end(self.judge_span, error)
            self.judge_span = None

    def end(self, error: str = "") -> None:
        self.end_judge(error)
        if self.pass_span is not None:
            _end(self.pass_span, error)
            self.pass_span, self.pass_number = None, 0


_sessions: dict[int, _Session] = {}


def _end(span: Span, error: str = "") -> None:
    if error:
        span.set_attribute("error.type", error)
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def _provider_name(model) -> str:
    label = getattr(model, "label", "") or "unknown"
    return "anthropic" if label == "anthropic" else label.split()[0]


@contextmanager
def session(run):
    """A worker drives the run (runs.worker.execute): its passes' spans hang under the run's root;
    whatever is open when the session ends (a pause, a crash) ends with it, and the spans are
    flushed before the task returns."""
    if not enabled():
        yield
        return
    _open_session(run)
    error = ""
    try:
        yield
    except BaseException as exc:
        error = type(exc).__name__
        raise
    finally:
        found = _sessions.pop(run.pk, None)
        if found is not None:
            found.end(error)
        flush()


@_quiet
def _open_session(run) -> None:
    _sessions[run.pk] = _Session(root=_root(run), agent=run.name, provider="unknown")


@_quiet
def trace_model(run, armed) -> None:
    """The armed run's model port traced: each call a `chat <model>` span."""
    if enabled() and run.pk in _sessions:
        _sessions[run.pk].provider = _provider_name(armed.model)
        armed.model = TracedModel(run, armed.model)


@_quiet
def pass_started(run, run_pass) -> None:
    """The engine holds pass `run_pass` (new, or a paused one picked up): its `invoke_agent` span
    in this session, the previous pass's ended."""
    found = _sessions.get(run.pk)
    if found is not None and found.pass_number != run_pass.number:
        _open_pass(run, found, run_pass.number, resumed=bool(getattr(run_pass, "steps_total", 0) or run_pass.ended_at))


def _open_pass(run, found: _Session, number: int, *, resumed: bool) -> None:
    found.end()
    found.pass_span = _tracer().start_span(
        f"invoke_agent {found.agent}",
        context=found.root,
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": found.provider,
            "gen_ai.agent.name": found.agent,
            "gen_ai.conversation.id": _conversation(run, number),
            "gen_ai.request.model": run.executor_model,
            "rysh.run.id": run.pk,
            "rysh.pass.number": number,
            "rysh.pass.resumed": resumed,
        },
    )
    found.pass_number = number


def _conversation(run, number: int) -> str:
    return f"run-{run.pk}-pass-{number}"  # each pass is a conversation of its own


# -- model calls -------------------------------------------------------------------------------


@_quiet
def _begin(run) -> tuple[trace.Tracer, _Session | None, Context]:
    """The tracer, the run's session here (if any) and the parent of a span about to start; None
    when tracing cannot (the call is then made untraced)."""
    found = _sessions.get(run.pk)
    return _tracer(), found, found.parent() if found else _root(run)


class TracedModel:
    """The run's model port, each call a `chat <model>` span; everything else is the port's."""

    def __init__(self, run, model):
        self._run = run
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    def complete(self, request):
        return chat(self._run, self._model, request)


def chat(run, model, request):
    """One model call as a `chat <model>` span, child of its pass (or of its judge span)."""
    begun = _begin(run)
    if begun is None:
        return model.complete(request)
    tracer, found, parent = begun
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": found.provider if found else _provider_name(model),
        "gen_ai.request.model": request.model,
        "gen_ai.request.max_tokens": request.max_tokens,
        "gen_ai.conversation.id": _conversation(run, request.pass_number),
        "rysh.run.id": run.pk,
        "rysh.pass.number": request.pass_number,
        "rysh.leg": request.purpose,
    }
    with tracer.start_as_current_span(
        f"chat {request.model}",
        context=parent,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if capture_content():
            span.set_attribute("gen_ai.system_instructions", json.dumps([{"type": "text", "content": request.system}]))
            span.set_attribute("gen_ai.input.messages", json.dumps([_message(m) for m in request.messages]))
        try:
            reply = model.complete(request)
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR))
            raise
        usage = reply.usage
        span.set_attributes(
            {
                "gen_ai.response.finish_reasons": [reply.stop_reason or ""],
                # the convention's input is every input token, cached or not (Anthropic's
                # input_tokens leaves cache reads and writes out)
                "gen_ai.usage.input_tokens": usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
                "rysh.usage.counted_tokens": usage.counted,
                "rysh.tool_calls": len(reply.tool_calls),
            }
        )
        if capture_content():
            output = {"role": "assistant", **_message({"content": reply.content}), "finish_reason": reply.stop_reason}
            span.set_attribute("gen_ai.output.messages", json.dumps([output]))
        return reply


@_quiet
def model_retry(attempt: int, cause: str) -> None:
    """A model call failed and is tried again (agents.anthropic_model): an event on its span."""
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event("rysh.model.retry", {"rysh.retry.attempt": attempt, "rysh.retry.cause": cause})
        span.set_attribute("rysh.model.retries", attempt)


def _message(message: dict) -> dict:
    """A Messages API turn in the convention's shape (role and parts); images are named, never sent."""
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    return {"role": message.get("role", "assistant"), "parts": [_part(b) for b in blocks]}


def _part(block: dict) -> dict:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text", "")}
    if kind == "tool_use":
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
    if kind == "tool_result":
        result = block.get("content")
        if not isinstance(result, str):
            result = "\n".join(b.get("text", "") for b in result or [] if b.get("type") == "text")
        return {"type": "tool_call_response", "id": block.get("tool_use_id"), "response": result}
    if kind == "thinking":
        return {"type": "reasoning", "content": block.get("thinking", "")}
    return {"type": kind or "unknown"}


# -- tool calls --------------------------------------------------------------------------------


def traced_tool(method):
    """ToolRunner._one_tool as an `execute_tool <tool>` span, child of the pass."""

    @wraps(method)
    def one_tool(runner, call: dict) -> dict:
        begun = _begin(runner.run) if enabled() and runner.run.pk in _sessions else None
        if begun is None:
            return method(runner, call)
        tracer, _found, parent = begun
        with tracer.start_as_current_span(
            f"execute_tool {call['name']}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call["name"],
                "gen_ai.tool.call.id": call.get("id", ""),
                "gen_ai.tool.type": "function",
                "rysh.run.id": runner.run.pk,
            },
        ) as span:
            if capture_content():
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps(call.get("input") or {}))
            result = method(runner, call)
            if result.get("is_error"):
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            if capture_content():
                span.set_attribute("gen_ai.tool.call.result", _part(result)["response"])
            return result

    return one_tool


# -- run events --------------------------------------------------------------------------------


@_quiet
def run_event(run, kind: str, message: str, data: dict, kinds: EventKinds) -> None:
    """A RunEvent (runs.events.record): an event on the span the run has open in this process; the
    judge's span opens and closes on `kinds.judging` and `kinds.verdict`; `kinds.granted` starts a
    new segment of the trace; `kinds.finished` emits the run's root span."""
    if not enabled() or kind in kinds.skipped:
        return
    found = _sessions.get(run.pk)
    if found is not None and kind == kinds.pass_started and found.pass_number != data.get("number"):
        _open_pass(run, found, data["number"], resumed=False)  # a new pass: its own span from its start
    if found is not None and found.pass_span is not None:
        if kind == kinds.judging:
            found.end_judge()
            found.judge_span = _judge_span(run, found)
        found.innermost().add_event(f"rysh.{kind}", _event_attributes(kind, message, data, kinds))
        if kind == kinds.verdict:
            found.judge_span.set_attribute("gen_ai.evaluation.score.label", data.get("verdict", ""))
            found.end_judge()
    if kind == kinds.finished:
        if found is not None:
            found.end()
        _emit_root(run, kinds)
    elif kind == kinds.granted:
        _new_segment(run)


def _judge_span(run, found: _Session) -> Span:
    return _tracer().start_span(
        f"judge pass {found.pass_number}",
        context=trace.set_span_in_context(found.pass_span, Context()),
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.evaluation.name": "until",
            "gen_ai.request.model": run.judge_model,
            "rysh.run.id": run.pk,
            "rysh.pass.number": found.pass_number,
        },
    )


def _event_attributes(kind: str, message: str, data: dict, kinds: EventKinds) -> dict:
    attributes = {
        name: value
        for key, name in EVENT_DATA.items()
        if isinstance(value := data.get(key), str | int | float | bool) and value is not None
    }
    if message and (kind not in kinds.content or capture_content()):
        attributes["rysh.event.message"] = message[:TEXT_LIMIT]
    return attributes


def _new_segment(run) -> None:
    """A grant lets a finished run go on: its later passes hang under a new span (a child of the
    root already emitted), emitted when the run finishes again."""
    stored = stored_context(run)
    trace_id, span_id = _ids_of(stored["traceparent"])
    made = {
        "traceparent": _traceparent(trace_id, _ids.generate_span_id()),
        "parent": f"{span_id:016x}",
        "start": time.time_ns(),
    }
    type(run).objects.filter(pk=run.pk).update(trace_context=made)
    run.trace_context = made


def _emit_root(run, kinds: EventKinds) -> None:
    """The run's root span (or a grant's segment), with the ids stored when it started."""
    stored = stored_context(run)
    trace_id, span_id = _ids_of(stored["traceparent"])
    parent = _context(trace_id, int(stored["parent"], 16)) if stored.get("parent") else Context()
    cause = run.cause or ""
    with _ids.chosen(trace_id, span_id):
        span = _tracer().start_span(
            f"invoke_workflow {run.name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.agent.name": run.name,
                "rysh.run.id": run.pk,
                "rysh.run.kind": run.kind,
                "rysh.run.cause": cause[:TEXT_LIMIT],
                "rysh.run.passes": run.pass_number,
                "rysh.run.verdict": run.last_verdict,
                "rysh.run.tokens_counted": run.tokens_counted,
                "rysh.run.granted": bool(stored.get("parent")) and stored.get("of") != "suite",
                "rysh.run.executor_model": run.executor_model,
                "rysh.run.judge_model": run.judge_model,
            },
            links=_resumed_link(run),
            start_time=stored["start"],
        )
    since = stored["start"]
    for event in run.events.filter(kind__in=kinds.on_root).order_by("id"):
        if _ns(event.created_at) >= since:
            span.add_event(
                f"rysh.{event.kind}",
                _event_attributes(event.kind, event.message, event.data, kinds),
                _ns(event.created_at),
            )
    if cause.startswith(("error", "judge error")):
        span.set_attribute("error.type", "run_error")
        span.set_status(Status(StatusCode.ERROR))
    span.end(_ns(run.ended_at))


def _resumed_link(run) -> list[Link]:
    """A resume is a new run (a trace of its own), linked to the run it resumes."""
    before = run.resumed_from if run.resumed_from_id else None
    traceparent = (before.trace_context or {}).get("traceparent") if before else None
    if not traceparent:
        return []
    return [Link(_remote(*_ids_of(traceparent)), {"rysh.link": "resumes", "rysh.run.id": before.pk})]


# -- eval suites (docs/evals.md) -----------------------------------------------------------------


@_quiet
def suite_context(suite) -> dict:
    """A suite starts: its trace context stored on Suite.trace_context (the case runs' parent, given
    to run_start as `trace_parent`); {} when tracing is off."""
    return stored_context(suite) if enabled() else {}


@_quiet
def suite_ended(suite, cases) -> None:
    """The suite's span, emitted once when its cases are graded, with the ids its runs already
    point at: `invoke_workflow evals <target>`, an event per case (its outcome and run)."""
    stored = suite.trace_context or {}
    if not enabled() or not stored.get("traceparent") or stored.get("emitted"):
        return
    trace_id, span_id = _ids_of(stored["traceparent"])
    states = [case.state for case in cases]
    with _ids.chosen(trace_id, span_id):
        span = _tracer().start_span(
            f"invoke_workflow evals {suite.target}",
            context=Context(),
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.evaluation.name": "evals",
                "rysh.suite.id": suite.pk,
                "rysh.suite.target": suite.target[:TEXT_LIMIT],
                "rysh.suite.side": suite.side,
                "rysh.suite.state": suite.state,
                "rysh.suite.cases": len(states),
                "rysh.suite.passed": states.count("passed"),
                "rysh.suite.failed": states.count("failed"),
                "rysh.suite.errors": states.count("error") + states.count("broken"),
                "rysh.suite.budget_tokens": suite.budget_tokens,
                "rysh.suite.tokens_counted": suite.tokens_counted,
            },
            start_time=stored["start"],
        )
    for case in cases:
        attributes = {"rysh.case.name": case.name, "rysh.case.state": case.state, "rysh.case.tokens": case.tokens}
        if case.run_id:
            attributes["rysh.run.id"] = case.run_id
        span.add_event("rysh.case", attributes, _ns(case.ended_at) if case.ended_at else None)
    if suite.state == "ceiling" or "error" in states:
        span.set_attribute("error.type", "ceiling" if suite.state == "ceiling" else "case_error")
        span.set_status(Status(StatusCode.ERROR))
    span.end(_ns(suite.graded_at or suite.ended_at))
    type(suite).objects.filter(pk=suite.pk).update(trace_context={**stored, "emitted": True})
    flush()
