"""sub_agent and todo on the real anthropic SDK against the fake Messages server: a sub-agent's
budget is carved out of its caller's leg before it starts, its tokens are counted once and
shown as a child on the run page; more than is left is refused with the numbers; no sub-agent
at depth 3; a cancel reaches it."""

import json

import pytest

from runs import services, worker
from runs.live.fragments import run_fragments
from runs.models import LedgerEntry, Pass, Run, RunEvent, Step
from runs.wiring import arm_run
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

RECIPE = """---
loop:
  do:
    max_iterations: 20
    budget:
      size: 1b
---
Count the results.
"""
SUB_MARK = "sub-agent of a budgeted agent run"


def first_text(body: dict) -> str:
    return body["messages"][0]["content"][0]["text"] if isinstance(body["messages"][0]["content"], list) else ""


def tool_names(body: dict) -> list[str]:
    return [t["name"] for t in body.get("tools") or []]


def results_of(body: dict) -> list[dict]:
    last = body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def text_of(result: dict) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


class Script:
    """Replies by who asks: the run's agent from `parent`, each sub-agent from `subs[its task]`."""

    def __init__(self, fake, parent: list[dict], subs: dict[str, list[dict]] | None = None, on_sub=None):
        self.parent, self.subs, self.on_sub = parent, subs or {}, on_sub
        self.bodies: list[dict] = []
        fake.responder = self

    def __call__(self, body: dict) -> dict:
        self.bodies.append(body)
        system = str(body.get("system"))
        if SUB_MARK in system:
            if self.on_sub:
                self.on_sub(body)
            queue = self.subs[first_text(body)]
            return queue.pop(0) if queue else {"text": "sub done"}
        return self.parent.pop(0) if self.parent else {"text": "Done."}

    def of(self, task: str | None) -> list[dict]:
        """The requests of the sub-agent given `task` (None: the run's agent)."""
        if task is None:
            return [b for b in self.bodies if SUB_MARK not in str(b.get("system"))]
        return [b for b in self.bodies if SUB_MARK in str(b.get("system")) and first_text(b) == task]


def delegate(task: str, **more) -> dict:
    return {"text": "Delegating.", "tool_calls": [{"name": "sub_agent", "input": {"task": task, **more}}]}


@pytest.fixture
def start(recipe_file):
    path = recipe_file(RECIPE, "counting", script=None)

    def go() -> Run:
        run = services.run_start(kind="task", name_or_path=str(path), args=[])
        worker.execute(run.pk, arm_run)
        run.refresh_from_db()
        return run

    return go


def test_a_parent_delegates_and_the_sub_agent_s_tokens_are_counted_once_and_shown_as_a_child(fake_anthropic, start):
    script = Script(
        fake_anthropic,
        parent=[delegate("List the results folder.", budget=30_000), {"text": "Done: none."}],
        subs={
            "List the results folder.": [
                {"text": "Listing.", "tool_calls": [{"name": "list_results", "input": {}}]},
                {"text": "The folder is empty."},
            ]
        },
    )
    run = start()
    assert (run.state, run.cause) == ("finished", "done")
    steps = list(Step.objects.filter(run_pass__run=run).order_by("number"))
    assert [(s.number, s.agent) for s in steps] == [(1, ""), (2, "sub-1"), (3, "sub-1"), (4, "")]
    assert steps[1].parent_step_id == steps[0].pk and steps[2].parent_step_id == steps[0].pk
    # counted exactly once: the server's bills, the ledger, the run's and the leg's counters agree
    billed = sum(e.billed for e in fake_anthropic.exchanges)
    assert run.tokens_counted == billed == sum(s.counted_tokens for s in steps)
    assert run.tokens_counted == sum(LedgerEntry.objects.filter(run=run).values_list("counted_tokens", flat=True))
    assert Pass.objects.get(run=run).leg_tokens == billed
    # the sub-agent had a fresh conversation: its task alone, and its own tools without todo
    first_sub = script.of("List the results folder.")[0]
    assert len(first_sub["messages"]) == 1 and "Count the results" not in json.dumps(first_sub["messages"])
    assert "todo" not in tool_names(first_sub) and "sub_agent" in tool_names(first_sub)
    assert "30,000 tokens" in str(first_sub["system"])
    answer = text_of(results_of(script.of(None)[1])[0])
    sub_tokens = steps[1].counted_tokens + steps[2].counted_tokens
    assert answer.startswith("sub-1: The folder is empty.") and f"2 step(s), {sub_tokens:,} tokens" in answer
    # the run page: the sub-agent as a child of step 1, with its steps and tokens
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    assert 'id="sub-agent-1-sub-1"' in page
    row = page.split('id="sub-agent-1-sub-1"')[1].split("</tr>")[0]
    assert "pass 1 · step 1" in row and f"<td>{sub_tokens}</td>" in row and "<td>2</td>" in row
    assert RunEvent.objects.filter(run=run, kind="sub-agent", data__agent="sub-1").count() == 2


def test_asking_more_than_the_leg_has_left_is_refused_with_the_numbers_and_the_parent_goes_on(fake_anthropic, start):
    script = Script(fake_anthropic, parent=[delegate("Everything.", budget="10b"), {"text": "Did it myself."}])
    run = start()
    assert (run.state, run.cause) == ("finished", "done")
    refusal = results_of(script.of(None)[1])[0]
    said = text_of(refusal)
    assert refusal["is_error"] and said.startswith("sub_agent asked 2,000,000 tokens; this leg has ")
    left = int(said.split("this leg has ")[1].split(" left")[0].replace(",", ""))
    first = Step.objects.get(run_pass__run=run, number=1)
    assert 0 < left < 200_000 - first.counted_tokens and "kept for your next answer" in said
    assert not Step.objects.filter(run_pass__run=run).exclude(agent="").exists()
    assert script.of("Everything.") == []


def test_a_sub_agent_at_depth_2_is_not_offered_sub_agent(fake_anthropic, start):
    script = Script(
        fake_anthropic,
        parent=[delegate("Level one.", budget=60_000), {"text": "Done."}],
        subs={
            "Level one.": [delegate("Level two.", budget=12_000), {"text": "One is done."}],
            "Level two.": [
                {"text": "", "tool_calls": [{"name": "sub_agent", "input": {"task": "Level three."}}]},
                {"text": "Two is done."},
            ],
        },
    )
    run = start()
    assert run.cause == "done"
    assert "sub_agent" in tool_names(script.of("Level one.")[0])
    assert "sub_agent" not in tool_names(script.of("Level two.")[0])
    refused = results_of(script.of("Level two.")[1])[0]
    assert refused["is_error"] and "unknown tool 'sub_agent'" in text_of(refused)
    agents = dict(Step.objects.filter(run_pass__run=run).exclude(agent="").values_list("agent", "parent_step__agent"))
    assert agents == {"sub-1": "", "sub-1.1": "sub-1"}
    # the nested one spent out of its parent's purse: both within what the first was carved
    spent = {a: 0 for a in agents}
    for step in Step.objects.filter(run_pass__run=run).exclude(agent=""):
        spent[step.agent] += step.counted_tokens
    assert spent["sub-1.1"] <= 12_000 and spent["sub-1"] + spent["sub-1.1"] <= 60_000
    assert run.tokens_counted == sum(e.billed for e in fake_anthropic.exchanges)


@pytest.mark.django_db(transaction=True)  # the fake server's thread writes the cancel
def test_a_cancel_during_a_sub_agent_stops_it_and_the_run(fake_anthropic, start):
    def cancel(body):
        Run.objects.filter(state="running").update(control="cancel")

    script = Script(
        fake_anthropic,
        parent=[delegate("Work long.", budget=30_000), {"text": "never asked"}],
        subs={"Work long.": [{"text": "x", "tool_calls": [{"name": "list_results", "input": {}}]}] * 5},
        on_sub=cancel,
    )
    run = start()
    assert (run.state, run.pause_reason) == ("paused", "cancelled")
    assert len(script.of("Work long.")) == 1 and len(script.of(None)) == 1  # nobody called again
    sub = Step.objects.get(run_pass__run=run, agent="sub-1")
    assert sub.counted_tokens > 0
    assert all("not run" in r["content"] or "cancelled" in r["content"] for r in sub.tool_results)
    assert run.tokens_counted == sum(LedgerEntry.objects.filter(run=run).values_list("counted_tokens", flat=True))


def test_todo_is_shown_on_the_run_page_and_in_its_live_fragment(fake_anthropic, start):
    items = [
        {"text": "Read the folder", "status": "done"},
        {"text": "Count <the> files", "status": "in_progress"},
        {"text": "Write the count", "status": "pending"},
    ]
    Script(
        fake_anthropic,
        parent=[
            {"text": "Planning.", "tool_calls": [{"name": "todo", "input": {"items": items}}]},
            {"text": "Too long.", "tool_calls": [{"name": "todo", "input": {"items": items * 11}}]},
            {"text": "Done."},
        ],
    )
    run = start()
    steps = list(Step.objects.filter(run_pass__run=run).order_by("number"))
    assert steps[0].tool_results[0]["content"] == "todo: 3 item(s) saved, 1 done"
    refused = steps[1].tool_results[0]
    assert refused["is_error"] and "33 items is more than the 30" in refused["content"]
    pushed = run_fragments(run, frozenset())
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    for html in (pushed, page):
        plan = html.split('id="run-agents"')[1].split("</section>")[0]
        assert plan.count("<li") == 3 and "Count &lt;the&gt; files" in plan
        assert 'class="todo-done"' in plan and 'class="todo-in_progress"' in plan


def test_sub_agent_calls_of_one_reply_past_the_parallel_limit_are_refused_with_the_numbers(
    fake_anthropic, start, settings
):
    settings.RYSH_SUBAGENTS_PARALLEL = 2
    calls = [{"name": "sub_agent", "input": {"task": f"Part {n}.", "budget": 10_000}} for n in range(1, 5)]
    script = Script(
        fake_anthropic,
        parent=[{"text": "Four at once.", "tool_calls": calls}, {"text": "Done."}],
        subs={f"Part {n}.": [{"text": f"part {n} done"}] for n in range(1, 5)},
    )
    run = start()
    assert run.cause == "done"
    answers = [text_of(r) for r in results_of(script.of(None)[1])]
    assert answers[0].startswith("sub-1: part 1 done") and answers[1].startswith("sub-2: part 2 done")
    for number, refused in ((3, answers[2]), (4, answers[3])):
        assert f"asked for sub-agent number {number}; at most 2 run at once" in refused
    assert script.of("Part 3.") == [] and script.of("Part 4.") == []
    agents = Step.objects.filter(run_pass__run=run).exclude(agent="").values_list("agent", flat=True)
    assert sorted(agents) == ["sub-1", "sub-2"]
