"""A suite started through the API, end to end with the real services (docs/evals.md, "The API,
MCP, notifications, metrics and traces"): the plan, the start as the token's owner, the cases'
real runs on the real anthropic SDK against the fake Messages server, then what every front door
says of it — the suite's answer, `eval.failed` to a subscribed channel, the metrics' pass rate
and the suite's trace with its case runs as children."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from audit.models import AuditEntry
from evals.local import suite_drive_here
from evals.models import Suite
from evals.services import suite_plan
from notify import services as notify_services
from notify.models import Delivery
from ops import metrics as figures
from tests.api.conftest import api_as  # noqa: F401  (the fixture)
from tests.evals.suites_setup import recipes, script  # noqa: F401  (the fixture)
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401  (the fixture)
from tests.ops.test_metrics import samples, value
from tests.ops.test_traces import by_name, spans  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_suite_started_over_the_api_is_answered_notified_measured_and_traced(
    api_as,  # noqa: F811
    recipes,  # noqa: F811
    fake_anthropic,  # noqa: F811
    spans,  # noqa: F811
):
    script(fake_anthropic)
    hook = notify_services.channel_save(
        user=None, name="evals-hook", kind="webhook", url="http://127.0.0.1:9/x", events_wanted=["eval.failed"]
    )[0]
    editor = api_as("editor", "operate")

    dry = editor.post("/api/recipes/task/fix/evals", {"dry_run": True})
    assert dry.status_code == 200, dry.content
    plan = dry.json()["plan"]
    assert [c["name"] for c in plan["cases"]] == ["bad", "good"]
    assert plan["budget_tokens"] == suite_plan(target="task/fix").budget_tokens > 0
    assert not Suite.objects.exists()

    started = editor.post("/api/recipes/task/fix/evals", {"provider": "anthropic"})
    assert started.status_code == 201, started.content
    answer = started.json()["suite"]
    assert answer["state"] == "running" and answer["started_by"] == "editor-user"
    assert {c["name"]: c["state"] for c in answer["cases"]} == {"bad": "pending", "good": "pending"}
    assert all(c["run"] for c in answer["cases"])
    suite = Suite.objects.get(pk=answer["id"])
    audited = AuditEntry.objects.get(action="eval.start")
    assert (audited.actor_name, audited.source) == ("editor-user via API token ci", "api")
    assert suite.trace_context["traceparent"]  # traces on: the suite's trace, stored at its start
    OrmQ.objects.all().delete()  # the queued runs are driven here, not by a cluster

    suite_drive_here(suite)

    got = editor.get(f"/api/suites/{suite.pk}").json()
    assert got["outcome"] == "failed" and got["pass_rate"] == 0.5 and got["tokens_counted"] > 0
    cases = {c["name"]: c for c in got["cases"]}
    assert cases["good"]["passed"] is True and cases["good"]["rubric_verdict"] == "YES"
    assert cases["bad"]["passed"] is False and cases["bad"]["failures"][0]["assertion"] == "files_changed"
    assert "test_calc.py" in cases["bad"]["failures"][0]["message"]
    listed = editor.get("/api/recipes/task/fix/evals").json()["suites"]
    assert [s["id"] for s in listed] == [suite.pk]

    delivery = Delivery.objects.get(event="eval.failed")
    assert delivery.channel == hook
    assert delivery.payload["title"] == f"eval suite #{suite.pk} of task/fix (main): 1 of 2 cases failed"
    assert delivery.payload["data"]["failed"][0]["case"] == "bad"

    found = samples(figures.exposition()[0].decode())
    assert value(found, "rysh_eval_pass_rate", recipe="task/fix", side="main") == 0.5
    assert value(found, "rysh_eval_cases_total", recipe="task/fix", side="main", outcome="failed") == 1
    assert value(found, "rysh_eval_tokens_counted_total", recipe="task/fix", side="main") == got["tokens_counted"]

    finished = spans.get_finished_spans()
    [top] = by_name(finished, "invoke_workflow evals ")
    assert top.attributes["rysh.suite.id"] == suite.pk and top.attributes["rysh.suite.failed"] == 1
    roots = [s for s in finished if s.name == "invoke_workflow fix"]
    assert len(roots) == 2 and {r.parent.span_id for r in roots} == {top.context.span_id}
    assert {s.context.trace_id for s in finished} == {top.context.trace_id}
