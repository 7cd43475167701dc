"""Approval gates and loop detection in the engine, the approve/reject services and CLI."""

import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents import ports
from agents.ports import ToolResult
from runs import services, worker
from runs.approvals import gate
from runs.models import Approval, ApprovalState, Pass, Run, RunState, Step
from runs.wiring import arm_run
from tests.fake_model import FakeModel, tool

GATED = """
    ---
    approve: ["publish", "click:Publish*"]
    loop:
      do:
        max_iterations: 10
        budget:
          size: 1b
    ---
    Publish the story.
"""


class Tools(ports.Tools):
    """A tools port that only records what it was asked to do."""

    names = ("publish", "click", "look")

    def __init__(self):
        self.calls = []

    def specs(self):
        return [{"name": n, "description": n, "input_schema": {"type": "object", "properties": {}}} for n in self.names]

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        return ToolResult(f"{name} done")


class Person(threading.Thread):
    """Answers the first pending approval after `delay` seconds, from another connection."""

    def __init__(self, approved=True, reason="", delay=0.0, via_cli=False):
        super().__init__(daemon=True)
        self.approved, self.reason, self.delay, self.via_cli = approved, reason, delay, via_cli
        self.saw_state = None
        self.output = ""

    def run(self):
        from django.db import connection

        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                pending = Approval.objects.filter(state=ApprovalState.PENDING).first()
                if pending:
                    break
                time.sleep(0.05)
            else:
                return
            self.saw_state = Run.objects.get(pk=pending.run_id).state
            time.sleep(self.delay)
            if self.via_cli:
                out = StringIO()
                call_command(
                    "auto",
                    "task",
                    "approve" if self.approved else "reject",
                    f"#{pending.run_id}",
                    *self.reason.split(),
                    stdout=out,
                )
                self.output = out.getvalue()
            else:
                services.approval_answer(approval=pending, user=None, approved=self.approved, reason=self.reason)
        finally:
            connection.close()


def drive_with(run, model, tools, person=None):
    if person:
        person.start()
    worker.execute(run.pk, lambda r: arm_run(r, model=model, tools=tools))
    if person:
        person.join(10)
    run.refresh_from_db()
    return run


PUBLISH_THEN_DONE = [{"text": "publishing", "tools": [tool("publish", story="one")]}, {"text": "Done."}]

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_holds_a_gated_call_until_a_person_approves_and_the_wait_is_off_the_clock(start):
    run = start(GATED)
    tools = Tools()
    person = Person(approved=True, delay=1.2)
    run = drive_with(run, FakeModel(task=PUBLISH_THEN_DONE), tools, person)
    assert (run.state, run.cause) == (RunState.FINISHED, "done")
    assert person.saw_state == RunState.AWAITING_APPROVAL
    assert tools.calls == [("publish", {"story": "one"})]
    approval = Approval.objects.get(run=run)
    assert (approval.state, approval.pattern, approval.step_number) == (ApprovalState.APPROVED, "publish", 1)
    step = Step.objects.get(run_pass__run=run, number=1)
    assert step.tool_results[0]["content"] == "publish done"
    # 1.2 s waiting for a person is on no clock: not the pass's, not the job's
    assert run.seconds_used < 1.0 and step.duration_ms < 1000
    kinds = list(run.events.values_list("kind", flat=True))
    assert kinds.index("approval.requested") < kinds.index("approval.answered")


def test_a_rejection_sends_the_reason_back_to_the_model_and_nothing_is_done(start):
    run = start(GATED)
    tools = Tools()
    model = FakeModel(task=PUBLISH_THEN_DONE)
    run = drive_with(run, model, tools, Person(approved=False, reason="not on a Friday"))
    assert run.cause == "done" and tools.calls == []
    result = Step.objects.get(run_pass__run=run, number=1).tool_results[0]
    assert result["is_error"] is True
    assert result["content"] == "not done: a person rejected this action. Their reason: not on a Friday"
    # the model hears it in the conversation
    sent = [
        b
        for m in Pass.objects.get(run=run).messages
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert "not on a Friday" in sent[0]["content"] and sent[0]["is_error"] is True


def test_the_cli_approves_and_rejects_with_a_reason(start):
    run = start(GATED)
    tools = Tools()
    person = Person(approved=False, reason="wrong title", via_cli=True)
    drive_with(run, FakeModel(task=PUBLISH_THEN_DONE), tools, person)
    assert person.output.strip() == f"run #{run.pk}: publish(story='one') rejected (wrong title)"
    assert Approval.objects.get(run=run).reason == "wrong title"
    with pytest.raises(CommandError, match="has no active run"):
        call_command("auto", "task", "approve", "job", stdout=StringIO())
    with pytest.raises(CommandError, match="has no action waiting for approval"):
        call_command("auto", "task", "approve", f"#{run.pk}", stdout=StringIO())


def test_an_unanswered_approval_times_out_as_a_rejection(start, settings):
    settings.RYSH_APPROVAL_TIMEOUT = 1
    run = start(GATED)
    tools = Tools()
    run = drive_with(run, FakeModel(task=PUBLISH_THEN_DONE), tools)
    assert tools.calls == [] and run.cause == "done"
    assert Approval.objects.get(run=run).state == ApprovalState.EXPIRED
    assert "nobody answered in time" in Step.objects.get(run_pass__run=run, number=1).tool_results[0]["content"]


def test_a_cancel_while_waiting_withdraws_the_approval_and_pauses_the_run(start):
    run = start(GATED)
    tools = Tools()

    class Canceller(threading.Thread):
        def run(self):
            from django.db import connection

            try:
                while not Approval.objects.filter(state=ApprovalState.PENDING).exists():
                    time.sleep(0.05)
                services.run_cancel(run=Run.objects.get(pk=run.pk))
            finally:
                connection.close()

    canceller = Canceller(daemon=True)
    canceller.start()
    run = drive_with(run, FakeModel(task=PUBLISH_THEN_DONE), tools)
    canceller.join(5)
    assert run.state_label == "paused(cancelled)" and tools.calls == []
    assert Approval.objects.get(run=run).state == ApprovalState.CANCELLED


def test_an_ungated_call_and_an_unmatched_pattern_run_at_once(start):
    run = start(GATED)
    tools = Tools()
    model = FakeModel(
        task=[{"text": "x", "tools": [tool("look"), tool("click", text="Save draft")]}, {"text": "Done."}]
    )
    run = drive_with(run, model, tools)
    assert [c[0] for c in tools.calls] == ["look", "click"] and not Approval.objects.exists()


def test_gate_patterns():
    assert gate(["click"], "click", ["anything"]) == ("click", "")
    assert gate(["click:Publish*"], "click", ["#go", "Publish story"]) == ("click:Publish*", "Publish story")
    assert gate(["click:Publish*"], "click", ["publish"]) == ("click:Publish*", "publish")  # any case
    assert gate(["click:Publish*"], "click", ["Save draft"]) is None
    assert gate(["click:Publish*"], "navigate", ["Publish"]) is None
    assert gate(["navigate:*/admin/*"], "navigate", ["https://x.test/admin/users"])[0] == "navigate:*/admin/*"


@pytest.mark.django_db
def test_it_refuses_a_call_identical_to_3_of_the_last_20(start):
    run = start(GATED)
    tools = Tools()
    same = tool("look", at="top")
    model = FakeModel(task=[{"text": "look", "tools": [same]}] * 5 + [{"text": "Done."}], repeat_last=False)
    run = drive_with(run, model, tools)
    assert tools.calls == [("look", {"at": "top"})] * 3
    results = [s.tool_results[0] for s in Step.objects.filter(run_pass__run=run).order_by("number")[:5]]
    assert [r["is_error"] for r in results] == [False, False, False, True, True]
    assert results[3]["content"].startswith(
        "refused: this exact call (look with the same input) is already 3 of your last 20 tool calls"
    )
    # a different input is a different call
    other = FakeModel(
        task=[{"text": "x", "tools": [tool("look", at=str(i % 2))]} for i in range(6)] + [{"text": "Done."}],
        repeat_last=False,
    )
    tools2 = Tools()
    drive_with(start(GATED, name="job2"), other, tools2)
    assert len(tools2.calls) == 6


def test_check_warns_about_an_approve_entry_that_names_no_tool(tmp_path, settings):
    settings.RYSH_RECIPES_REPO = str(tmp_path)
    folder = tmp_path / ".rysh/automations/webs"
    folder.mkdir(parents=True)
    (folder / "w.md").write_text('---\napprove: ["clik:Publish*", "click:Publish*", navigate]\n---\nx\n')
    out = StringIO()
    call_command("auto", "web", "check", "w", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if "approve:" in line]
    assert len(lines) == 1 and "'clik:Publish*' names no web tool" in lines[0]


def test_a_recipes_approve_timeout_sets_how_long_a_person_has(start, settings):
    settings.RYSH_APPROVAL_TIMEOUT = 1  # the installation's default; the recipe asks for 2h
    run = start(GATED.replace("    approve:", "    approve_timeout: 2h\n    approve:"))
    person = Person(approved=True, delay=1.5)  # past the default, well within the recipe's
    run = drive_with(run, FakeModel(task=PUBLISH_THEN_DONE), Tools(), person)
    approval = Approval.objects.get(run=run)
    assert approval.state == ApprovalState.APPROVED
    waited = (approval.expires_at - approval.created_at).total_seconds()
    assert 7190 < waited <= 7200
