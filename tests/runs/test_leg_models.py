"""Each leg's model and effort (docs/running-loops.md, "Models and efforts"), on the real anthropic
SDK against the fake Messages server: the task leg sends `loop.do.effort`, the wrap-up leg calls
`loop.do.budget.watch.model` with its effort, the judge `loop.while.model` with its effort. And
`loop.do.auto_approve: false` holds every task-leg call for a person."""

import pytest

from runs import services, worker
from runs.engine.controls import ASK_EVERY_CALL
from runs.models import Approval, ApprovalState, RunState, Step
from runs.wiring import arm_run
from runs.workbench import rejudge as rj
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.runs.rejudge_fixtures import judged_run, scripted_verdicts
from tests.runs.test_approvals import Person, Tools, drive_with

SEATS = """---
model: claude-opus-4-7
effort: low
loop:
  do:
    effort: high
    max_iterations: 4
    budget:
      size: 1b
      watch:
        takeover_when: 50
        takeover_prompt: Save what you have and say PARTIAL.
        model: claude-sonnet-5-5
        effort: medium
        floor: {trigger_iterations: 1, trigger_duration: 1s, trigger_size: 1p}
  while:
    max_iterations: 1
    model: claude-opus-5-5
    effort: low
    prompts:
      until: summary.md exists
---
Write summary.md.
"""
LIST = {"name": "list_results", "input": {}}
SAVE = {"name": "save_result", "input": {"filename": "summary.md", "content": "short"}}


def is_judge(body) -> bool:
    return "independent judge" in str(body.get("system"))


@pytest.mark.django_db
def test_each_leg_calls_its_own_model_with_its_own_effort(fake_anthropic, recipe_file):
    queue = judge_or(fake_anthropic)
    queue += [
        {"text": "Looking.", "tool_calls": [LIST]},
        {"text": "Looking again.", "tool_calls": [dict(LIST, input={"prefix": "s"})]},  # the task's 2 steps
        {"text": "Saving.", "tool_calls": [SAVE]},
        {"text": "PARTIAL: summary.md saved."},
    ]
    path = recipe_file(SEATS, "seats", script=None)
    run = services.run_start(kind="task", name_or_path=str(path), args=[])
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "fulfilled")
    calls = [r.json for r in fake_anthropic.requests if r.json and "messages" in r.json and "max_tokens" in r.json]
    task, judge = [b for b in calls if not is_judge(b)], [b for b in calls if is_judge(b)]
    seats = [(b["model"], (b.get("output_config") or {}).get("effort")) for b in task]
    assert seats == [("claude-opus-4-7", "high")] * 2 + [("claude-sonnet-5-5", "medium")] * 2
    assert judge and all((b["model"], b["output_config"]) == ("claude-opus-5-5", {"effort": "low"}) for b in judge)
    # the ledger counts each step on the model that spent it
    legs = list(Step.objects.filter(run_pass__run=run).order_by("number").values_list("leg", "model"))
    assert legs == [("task", "claude-opus-4-7")] * 2 + [("wrap-up", "claude-sonnet-5-5")] * 2 + [
        ("judging", "claude-opus-5-5")
    ]


@pytest.mark.django_db
def test_without_the_keys_every_leg_keeps_the_task_model_and_the_judge_sends_no_effort(fake_anthropic, recipe_file):
    text = SEATS.replace("        model: claude-sonnet-5-5\n        effort: medium\n", "").replace(
        "    model: claude-opus-5-5\n    effort: low\n", "    judge_model: claude-opus-5-5\n"
    )
    queue = judge_or(fake_anthropic)
    queue += [
        {"text": "Looking.", "tool_calls": [LIST]},
        {"text": "Looking again.", "tool_calls": [dict(LIST, input={"prefix": "s"})]},
        {"text": "Saving.", "tool_calls": [SAVE]},
        {"text": "PARTIAL."},
    ]
    path = recipe_file(text, "plain", script=None)
    run = services.run_start(kind="task", name_or_path=str(path), args=[])
    worker.execute(run.pk, arm_run)
    calls = [r.json for r in fake_anthropic.requests if r.json and "max_tokens" in r.json]
    task = [(b["model"], b["output_config"]["effort"]) for b in calls if not is_judge(b)]
    assert task == [("claude-opus-4-7", "high")] * 4  # the wrap-up falls back to the task leg's
    assert all("output_config" not in b for b in calls if is_judge(b))


ASKING = """
    ---
    loop:
      do:
        auto_approve: false
        max_iterations: 10
        budget:
          size: 1b
    ---
    Publish the story.
"""


@pytest.mark.django_db(transaction=True)
def test_auto_approve_false_holds_every_task_leg_call_for_a_person(start):
    run = start(ASKING)
    tools = Tools()
    model = FakeModel(task=[{"text": "looking", "tools": [tool("look", at="home")]}, {"text": "Done."}])
    run = drive_with(run, model, tools, Person(approved=True))
    assert (run.state, run.cause) == (RunState.FINISHED, "done")
    approval = Approval.objects.get(run=run)
    assert (approval.state, approval.pattern, approval.tool_name) == (ApprovalState.APPROVED, ASK_EVERY_CALL, "look")
    assert tools.calls == [("look", {"at": "home"})]


@pytest.mark.django_db(transaction=True)
def test_auto_approve_false_sends_a_rejection_back_and_nothing_runs(start):
    run = start(ASKING)
    tools = Tools()
    model = FakeModel(task=[{"text": "looking", "tools": [tool("look", at="home")]}, {"text": "Done."}])
    run = drive_with(run, model, tools, Person(approved=False, reason="not today"))
    assert tools.calls == []
    result = Step.objects.get(run_pass__run=run, number=1).tool_results[0]
    assert result["is_error"] and "not today" in result["content"]


@pytest.mark.django_db(transaction=True)
def test_auto_approve_true_is_as_before(start):
    run = start(ASKING.replace("auto_approve: false", "auto_approve: true"))
    tools = Tools()
    run = drive_with(run, FakeModel(task=[{"text": "x", "tools": [tool("look", at="home")]}, {"text": "Done."}]), tools)
    assert run.cause == "done" and tools.calls == [("look", {"at": "home"})] and not Approval.objects.exists()


@pytest.mark.django_db
def test_a_rejudge_sends_the_judges_effort(fake_anthropic, tmp_path):
    judged_run(tmp_path / "a", [("NO", "R1 draft"), ("YES", "R2 one source")])
    scripted_verdicts(fake_anthropic, {"R2": "YES\nfine", "R1": "NO\nnot yet"})
    asked = dict(kind="task", name="report", until="result.md names a source.", n=2, enqueue=False)
    for model, effort, sent in (
        ("claude-opus-4-7", "medium", {"effort": "medium"}),
        ("claude-haiku-4-5", "medium", None),  # a model that takes none gets none
        ("claude-opus-4-7", "", None),
    ):
        fake_anthropic.requests.clear()
        rejudge = rj.rejudge_start(judge_model=model, judge_effort=effort, **asked)
        assert rj.rejudge_execute(rejudge.pk).cause == "done"
        bodies = [r.json for r in fake_anthropic.requests if r.path == "/v1/messages"]
        assert len(bodies) == 2 and all(body.get("output_config") == sent for body in bodies)
