"""Random delegation scripts on the worst-case model: a run's agent and all its sub-agents
together never spend one token past the leg's allotment, and no sub-agent (with its own
sub-agents) past the budget carved for it."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.models import LedgerEntry, Pass, Run, RunEvent, Step
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

asked = st.one_of(st.none(), st.integers(500, 400_000), st.sampled_from(["5p", "40p", "1b"]))


def delegation(budget, depth: int) -> dict:
    arguments = {"task": f"Part at depth {depth}."}
    if budget is not None:
        arguments["budget"] = budget
    return tool("sub_agent", **arguments)


@st.composite
def scripts(draw):
    size = draw(st.integers(20, 400))
    task = []
    for _ in range(draw(st.integers(1, 3))):
        calls = [delegation(draw(asked), 1) for _ in range(draw(st.integers(0, 4)))]
        task.append({"text": "delegating", "tools": calls or [tool("list_results")]})
    sub = [{"text": "looking", "tools": [tool("list_results")]} for _ in range(draw(st.integers(0, 2)))]
    if draw(st.booleans()):
        sub.insert(draw(st.integers(0, len(sub))), {"text": "again", "tools": [delegation(draw(asked), 2)]})
    sub.append({"text": "sub-task done"})
    recipe = f"---\nloop:\n  do:\n    max_iterations: 8\n    budget:\n      size: {size}p\n---\nWork.\n"
    return recipe, task + [{"text": "Done."}], sub, draw(st.booleans())


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(script=scripts())
def test_parent_and_sub_agents_never_pass_the_leg_s_allotment(start, script):
    recipe, task, sub, adversarial = script
    run = start(recipe, name=f"job{Run.objects.count()}")
    model = FakeModel(task=task, adversarial=adversarial, repeat_last=False)
    model.turns["sub-agent"] = sub
    run = drive(run, model)
    assert run.state == "finished", run.cause
    allotment = run.plan["split"]["task"]["tokens"]
    the_pass = Pass.objects.get(run=run)
    steps = Step.objects.filter(run_pass=the_pass, leg="task")
    spent = sum(s.counted_tokens for s in steps)
    assert spent <= allotment  # the parent's ceiling holds whatever it delegated
    assert the_pass.leg_tokens == spent  # the leg's counter saw every sub-agent's step
    assert run.tokens_counted == sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))
    assert run.tokens_counted <= run.plan["worst_tokens"]
    for started in RunEvent.objects.filter(run=run, kind="sub-agent", data__ended=False):
        agent = started.data["agent"]
        own = sum(s.counted_tokens for s in steps if s.agent == agent or s.agent.startswith(agent + "."))
        assert own <= started.data["budget"]
