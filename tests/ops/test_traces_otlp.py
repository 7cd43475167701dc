"""The issue's "done when" for traces: a real qcluster, pointed at an OTLP/HTTP receiver this test
starts on loopback by the standard OTEL_EXPORTER_OTLP_ENDPOINT, sends a run's spans as protobuf;
decoded, they are one tree (run -> passes -> model calls, tools, judge). The batch processor's
timer is set far beyond the test, so the spans arrive only through the flush at the end of the
worker's task (the per-process setup after django-q2's fork)."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.e2e.stack import Stack

RECIPE = """---
description: A traced run (tests/ops/test_traces_otlp.py).
loop:
  do:
    max_iterations: 10
    budget:
      size: 8p
  while:
    max_iterations: 2
    budget: 24p
    prompts:
      until: notes.md is saved.
---
Save notes.md in {{output_dir}} with the results tool.
"""
SCRIPT = """latency_seconds: 0
passes:
  - task:
      - text: "Saving the notes."
        tool_calls:
          - name: save_result
            input:
              filename: notes.md
              content: "the secret notes"
      - text: "Done."
    judge: "YES\\nnotes.md is saved."
"""


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver: POST /v1/traces, protobuf in, an empty success out."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []

    def spans(self) -> list[tuple[object, object]]:
        """(resource, span) of every span received."""
        return [
            (rs.resource, span)
            for request in self.requests
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.paths.append(self.path)
        self.server.requests.append(request)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def attributes(span) -> dict:
    found = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        found[kv.key] = list(value.array_value.values) if kind == "array_value" else getattr(value, kind)
    return found


def test_a_real_worker_sends_the_runs_span_tree_to_an_otlp_receiver(receiver):
    stack = Stack(
        workers=1,
        extra_env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
            "OTEL_BSP_SCHEDULE_DELAY": "600000",  # only the end-of-task flush sends in time
            "OTEL_SERVICE_NAME": "",
        },
    )
    try:
        stack.setup()
        stack.add_recipes(
            {".rysh/automations/tasks/traced.md": RECIPE, ".rysh/automations/tasks/traced.script.yaml": SCRIPT}
        )
        stack.start_worker()
        pk = stack.run("traced")
        row = stack.wait_run(pk, lambda r: r["state"] == "finished", timeout=60)
        assert row["cause"] == "fulfilled", row
        deadline = time.monotonic() + 15
        while not any(s.name.startswith("invoke_workflow") for _, s in receiver.spans()):
            assert time.monotonic() < deadline, f"no root span received: {[s.name for _, s in receiver.spans()]}"
            time.sleep(0.2)
        stored = stack.query(f"""
            from runs.models import Run
            print(json.dumps(Run.objects.get(pk={pk}).trace_context))""")
    finally:
        stack.stop()

    assert set(receiver.paths) == {"/v1/traces"}
    received = receiver.spans()
    resources = {r.SerializeToString() for r, _ in received}
    assert len(resources) == 1
    service = {kv.key: kv.value.string_value for kv in received[0][0].attributes}["service.name"]
    assert service == "rysh-dashboard"
    spans = [s for _, s in received]
    assert len({s.trace_id for s in spans}) == 1
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans)  # each span once

    [root] = [s for s in spans if s.name == "invoke_workflow traced"]
    assert root.parent_span_id == b""
    assert stored["traceparent"] == f"00-{root.trace_id.hex()}-{root.span_id.hex()}-01"
    assert attributes(root)["rysh.run.cause"] == "fulfilled"

    def parent(span):
        return by_id[span.parent_span_id].name

    [one_pass] = [s for s in spans if s.name == "invoke_agent traced"]
    assert one_pass.parent_span_id == root.span_id
    assert attributes(one_pass)["gen_ai.operation.name"] == "invoke_agent"
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert sorted(attributes(c)["rysh.leg"] for c in chats) == ["judging", "task", "task"]
    for chat in chats:
        a = attributes(chat)
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "scripted"
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert parent(chat) == ("judge pass 1" if a["rysh.leg"] == "judging" else "invoke_agent traced")
    [saved] = [s for s in spans if s.name == "execute_tool save_result"]
    assert saved.parent_span_id == one_pass.span_id
    [judge] = [s for s in spans if s.name == "judge pass 1"]
    assert judge.parent_span_id == one_pass.span_id
    assert attributes(judge)["gen_ai.evaluation.score.label"] == "YES"
    assert b"the secret notes" not in b"".join(r.SerializeToString() for r in receiver.requests)
