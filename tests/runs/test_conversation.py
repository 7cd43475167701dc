"""A pass's conversation is stored one row per turn: a continue, a lost worker's re-run or a
reload reads back exactly what the model was last sent, and a step writes what it appended,
never the conversation again."""

import base64
import copy
import json
import re
import time
from collections import Counter, defaultdict

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.ports import ToolResult, Tools
from runs import engine, services, worker
from runs.conversation import IMAGES_KEPT, Conversation, count_images, tool_result
from runs.engine import CONTROL_POLL_SECONDS
from runs.models import Control, LedgerEntry, Pass, Run, RunState, Step, StepStatus
from runs.wiring import arm_run
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

IMAGE = {"media_type": "image/jpeg", "data": base64.b64encode(b"\xff\xd8" + b"x" * 300).decode()}
LANDING = """
    ---
    loop:
      do:
        max_iterations: 10
        budget:
          size: 1b
          watch:
            takeover_when: 50
            takeover_prompt: Save what you have now.
    ---
    Look around.
"""


class SeeingTools(Tools):
    """Each read_page returns a screenshot: after three, older ones leave the conversation."""

    def specs(self):
        return [{"name": "read_page", "description": "r", "input_schema": {"type": "object", "properties": {}}}]

    def call(self, name, arguments):
        return ToolResult(f"page {arguments.get('n')}", images=[IMAGE])


def drive_with(run, model, tools):
    worker.execute(run.pk, lambda r: arm_run(r, model=model, tools=tools))
    run.refresh_from_db()
    return run


def looking(n):
    return [{"text": "look", "tools": [tool("read_page", n=i)]} for i in range(n)]


# -- the rows hold what the model was last sent ------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("reply"), st.integers(0, 2)),
        st.tuples(st.just("results"), st.lists(st.integers(0, 2), min_size=1, max_size=3)),
        # PostgreSQL's jsonb holds no NUL character (nor did the JSON column before the rows)
        st.tuples(st.just("text"), st.text(st.characters(exclude_characters="\x00"), max_size=12)),
        st.tuples(st.just("save"), st.none()),
        st.tuples(st.just("reload"), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=operations)
def test_the_rows_always_hold_what_the_model_was_last_sent(start, ops):
    run = Run.objects.first() or start("---\n---\nGo.\n")
    run_pass = Pass.objects.create(run=run, number=Pass.objects.filter(run=run).count() + 1)
    conversation = Conversation.start(run_pass, "Go.")
    for kind, argument in ops:
        if kind == "reply":
            calls = [
                {"type": "tool_use", "id": f"t{i}", "name": "read_page", "input": {"i": i}} for i in range(argument)
            ]
            conversation.append("assistant", [{"type": "text", "text": "t"}, *calls])
        elif kind == "results":
            conversation.append(
                "user", [tool_result(f"t{i}", "seen", False, [IMAGE] * shots) for i, shots in enumerate(argument)]
            )
            conversation.drop_old_images()
        elif kind == "text":
            conversation.append_user_text(argument)
        elif kind == "save":
            conversation.save()
            assert run_pass.messages == conversation.messages
        else:  # a continue: a new worker reads the rows back
            conversation.save()
            conversation = Conversation.load(run_pass)
        assert count_images(conversation.messages) <= IMAGES_KEPT
    conversation.save()
    assert Conversation.load(run_pass).messages == conversation.messages == run_pass.messages


# -- continue and a lost worker pick up exactly where the model was ---------------------------


@pytest.fixture
def held(monkeypatch):
    """The engine's conversation in memory at the moment it pauses."""
    seen = {}
    pause = engine.Engine._pause

    def remember(self, reason):
        seen[reason] = copy.deepcopy(self.conversation.messages)
        pause(self, reason)

    monkeypatch.setattr(engine.Engine, "_pause", remember)
    return seen


class Snapshots(FakeModel):
    """A FakeModel that keeps a copy of every request's messages as sent."""

    def __init__(self, **options):
        super().__init__(**options)
        self.sent = []

    def complete(self, request):
        self.sent.append(copy.deepcopy(request.messages))
        return super().complete(request)


def test_a_continue_after_a_cancel_mid_call_sends_the_conversation_it_paused_with(start, held):
    run = start(LANDING)
    cancelled = {}

    def cancel_the_seventh(request):
        if len(request.messages) == 13 and not cancelled:  # wrap-up's second call
            cancelled["yes"] = True
            Run.objects.filter(pk=run.pk).update(control=Control.CANCEL)
            time.sleep(CONTROL_POLL_SECONDS + 0.1)  # the call notices it in flight

    model = Snapshots(
        task=looking(5), wrap_up=looking(2) + [{"text": "Saved."}], repeat_last=False, on_call=cancel_the_seventh
    )
    run = drive_with(run, model, SeeingTools())
    assert run.state_label == "paused(cancelled)"
    paused_with = held["cancelled"]
    assert paused_with == model.sent[-1] == Pass.objects.get(run=run).messages
    assert count_images(paused_with) == IMAGES_KEPT  # older screenshots were dropped, in the rows too
    assert "Save what you have now." in str(paused_with[10])  # the wrap-up joined a stored turn

    services.run_continue(run=run)
    before = len(model.sent)
    run = drive_with(run, model, SeeingTools())
    assert run.cause == "done"
    assert model.sent[before] == paused_with


def test_a_continue_at_the_step_cap_sends_the_conversation_it_paused_with(start, held):
    run = start("---\nloop:\n  do:\n    interval: 2\n    auto_continue: false\n---\nLook.\n")
    model = Snapshots(task=looking(4) + [{"text": "Done."}], repeat_last=False)
    run = drive_with(run, model, SeeingTools())
    assert run.state_label == "paused(step cap)"
    paused_with = held["step cap"]
    assert paused_with[-1]["content"][-1]["text"].startswith("Continue from where you stopped")
    services.run_continue(run=run)
    before = len(model.sent)
    run = drive_with(run, model, SeeingTools())
    assert model.sent[before] == paused_with == model.sent[before - 1] + model.sent[before][-2:]


class WorkerDied(BaseException):
    """Not an Exception: nothing in the engine catches it, as with a killed process."""


def test_a_lost_worker_is_continued_with_the_conversation_its_call_was_sent(start, settings):
    settings.RYSH_WORKER_LOST_RETRIES = 1
    run = start(LANDING)
    died = {}

    def die_in_the_wrap_up(request):
        if request.purpose == "wrap-up" and not died:
            died["messages"] = copy.deepcopy(request.messages)
            raise WorkerDied()

    model = Snapshots(
        task=looking(5), wrap_up=looking(1) + [{"text": "Saved."}], repeat_last=False, on_call=die_in_the_wrap_up
    )
    with pytest.raises(WorkerDied):
        drive_with(run, model, SeeingTools())
    lost = Step.objects.get(run_pass__run=run, status=StepStatus.PENDING)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=None)
    assert services.runs_sweep_lost()[0].endswith("continued from its checkpoint")
    before = len(model.sent)
    run = drive_with(run, model, SeeingTools())
    assert (run.state, run.cause) == (RunState.FINISHED, "done")
    assert model.sent[before] == died["messages"] == model.sent[before - 1]
    lost.refresh_from_db()
    assert (lost.status, lost.counted_tokens) == (StepStatus.LOST, lost.reserved_tokens)
    numbers = list(Step.objects.filter(run_pass__run=run).values_list("number", flat=True))
    assert numbers == list(range(1, len(numbers) + 1))  # the next worker numbered on after it
    assert run.tokens_counted == sum(LedgerEntry.objects.filter(run=run).values_list("counted_tokens", flat=True))


# -- a step writes what it appended ----------------------------------------------------------


class BigPages(Tools):
    """A 5 KB page per call, marked with the call's `n`."""

    def specs(self):
        return [{"name": "read_page", "description": "r", "input_schema": {"type": "object", "properties": {}}}]

    def call(self, name, arguments):
        return ToolResult(f"<page {arguments['n']}>" + "lorem ipsum " * 420)


def as_text(value) -> str:
    """A parameter's text as the database receives it: psycopg wraps JSON in a Jsonb, and a bulk
    insert on PostgreSQL sends an array per column."""
    if isinstance(value, (list, tuple)):
        return "".join(as_text(v) for v in value)
    if hasattr(value, "obj"):
        return json.dumps(value.obj)
    return value if isinstance(value, str) else ""


def test_a_step_writes_what_it_appended_and_never_the_conversation_again(start):
    run = start("---\nloop:\n  do:\n    budget:\n      size: 1s\n---\nRead.\n")
    model = FakeModel(task=looking(30) + [{"text": "Done."}], repeat_last=False)
    written, pages, statements = Counter(), defaultdict(set), Counter()

    def measure(execute, sql, params, many, context):
        step = model.calls  # from call k until call k + 1: step k settles, step k + 1 reserves
        statements[step] += 1
        if sql.lstrip()[:6].upper() in ("INSERT", "UPDATE"):
            text = "".join(as_text(p) for p in params or [])
            written[step] += len(text.encode())
            pages[step] |= {int(n) for n in re.findall(r"<page (\d+)>", text)}
        return execute(sql, params, many, context)

    with connection.execute_wrapper(measure):
        run = drive_with(run, model, BigPages())
    assert run.cause == "done" and model.calls == 31
    for step in range(1, 31):
        assert pages[step] == {step - 1}, step  # only its own page: no earlier turn written again
    assert written[30] <= 1.05 * written[2]  # flat, though the conversation grew fifteenfold
    assert statements[2] == statements[29] <= 11  # 11: the lookup of the quotas that apply
