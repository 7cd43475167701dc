"""No leg and no job ever passes its allotment: hundreds of random jobs, worst-case model."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.models import LedgerEntry, Pass, Run
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db


@st.composite
def jobs(draw):
    size = draw(st.integers(4, 120))
    takeover = draw(st.booleans())
    loop = draw(st.booleans())
    passes = draw(st.integers(1, 4))
    total = draw(st.one_of(st.none(), st.integers(4, 400)))
    lines = [
        "---",
        "loop:",
        "  do:",
        f"    max_iterations: {draw(st.integers(1, 12))}",
        "    budget:",
        f"      size: {size}p",
    ]
    if takeover:
        lines += [
            "      watch:",
            f"        takeover_when: {draw(st.integers(10, 99))}",
            "        takeover_prompt: Land it now.",
        ]
    if loop:
        lines += ["  while:", f"    max_iterations: {passes}", "    prompts:", "      until: Five entries."]
        if total:
            lines.append(f"    budget: {total}p")
    lines += ["---", "Work on the list."]
    tools = draw(st.lists(st.sampled_from(["list_results", "save"]), min_size=0, max_size=2))
    return "\n".join(lines) + "\n", tools, draw(st.booleans())


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(job=jobs())
def test_it_never_passes_an_allotment(start, job):
    text, tools, adversarial = job
    calls = [tool("save_result", filename="r.md", content="x" * 300) if t == "save" else tool(t) for t in tools]
    run = start(text, name=f"job{Run.objects.count()}")
    model = FakeModel(
        task=[{"text": "working " * 30, "tools": calls}] if calls else [{"text": "Done."}],
        wrap_up=[{"text": "landing", "tools": [tool("list_results")]}],
        judge=["NO\nnot yet"] * 5,
        adversarial=adversarial,
    )
    run = drive(run, model)
    plan = run.plan
    assert run.state == "finished", run.cause
    assert run.tokens_counted == sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))
    if plan["outer_tokens"]:
        assert run.tokens_counted <= plan["outer_tokens"]
    assert run.tokens_counted <= plan["worst_tokens"]
    for p in Pass.objects.filter(run=run):
        task = sum(s.counted_tokens for s in p.steps.filter(leg="task"))
        wrap = sum(s.counted_tokens for s in p.steps.filter(leg="wrap-up"))
        judge = sum(s.counted_tokens for s in p.steps.filter(leg="judging"))
        assert task <= plan["split"]["task"]["tokens"]
        assert p.steps.filter(leg="task").count() <= plan["split"]["task"]["steps"]
        if plan["split"]["takeover"]:
            assert wrap <= plan["split"]["takeover"]["tokens"]
        else:
            assert wrap == 0
        assert judge <= plan["judge_tokens"]
