"""Near the edge: exact counts instead of the byte bound alone, earlier tool results cleared and
new ones cut to fit what the leg has left — and still never one token past an allotment."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.anthropic_model import AnthropicModel
from runs import worker
from runs.arming import reminder
from runs.conversation import clear_old_results
from runs.engine import fitting
from runs.models import LedgerEntry, Message, Pass, Run
from runs.wiring import arm_run
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import FAKE_KEY, FakeAnthropic

pytestmark = pytest.mark.django_db

READER = """
---
loop:
  do:
    max_iterations: 40
    budget:
      size: 15p
      watch:
        takeover_when: 80
        takeover_prompt: Save what you have now.
---
Read the pages in pages/ one by one and keep notes.
"""
PAGE = "A line of a page of text that a browsing agent read today. " * 340  # ~20 KB


def write_pages(run: Run, count: int = 10) -> None:
    folder = Path(run.output_dir) / "pages"
    folder.mkdir(parents=True, exist_ok=True)
    an_hour_ago = time.time() - 3600  # never the run's newest result
    for n in range(1, count + 1):
        path = folder / f"page-{n:02d}.txt"
        path.write_text(f"page {n}\n{PAGE}")
        os.utime(path, (an_hour_ago, an_hour_ago))


def reader(body: dict) -> dict:
    """Read a new page every task turn; after the takeover prompt, save and stop."""
    said = str(body["messages"])
    if "Save what you have now." in said:
        if '"save_result"' in said or "'save_result'" in said:
            return {"text": "Saved."}
        return {"tool_calls": [{"name": "save_result", "input": {"filename": "notes.md", "content": "notes"}}]}
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return {
        "text": "Next page.",
        "tool_calls": [{"name": "read_result", "input": {"filename": f"pages/page-{turn % 10 + 1:02d}.txt"}}],
    }


def drive_reader(start, fake: FakeAnthropic, *, exact: bool = True) -> Run:
    run = start(READER, name=f"reader{Run.objects.count()}")
    write_pages(run)
    fake.responder = reader
    model = AnthropicModel(api_key=FAKE_KEY, base_url=fake.base_url, backoff_seconds=0.01)

    def armed_for(r):
        armed = arm_run(r, model=model)
        armed.exact_counts = exact
        return armed

    worker.execute(run.pk, armed_for)
    run.refresh_from_db()
    return run


def task_use(run: Run) -> tuple[int, int, int]:
    """(task calls, task tokens, task allotment) of the run's first pass."""
    steps = Pass.objects.get(run=run, number=1).steps.filter(leg="task")
    return steps.count(), sum(s.counted_tokens for s in steps), run.plan["split"]["task"]["tokens"]


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def test_a_reader_of_20_kb_pages_uses_its_task_leg_and_never_passes_it(start, fake):
    run = drive_reader(start, fake)
    calls, used, allotment = task_use(run)
    assert run.state == "finished", run.cause
    assert calls >= 3 and used <= allotment
    assert used >= 0.85 * allotment, (calls, used, allotment)
    said = " ".join(str(c) for c in Message.objects.filter(run_pass__run=run).values_list("content", flat=True))
    assert "to fit the budget left" in said  # an earlier page cleared or this one cut, and said so
    assert 0 < len(fake.count_requests) <= calls + 2  # counted near the edge, about once a step


def test_with_counting_off_or_failing_the_byte_bound_stands_as_before(start, fake):
    today = task_use(drive_reader(start, fake, exact=False))
    assert today[0] == 1 and today[1] < 0.1 * today[2]  # the failure the byte bound alone gives
    fake.fail_next_count(500, times=1000)
    failing = task_use(drive_reader(start, fake))
    assert failing[0] <= 2 and failing[1] <= failing[2]  # never a guess: no count, no room


@st.composite
def jobs(draw):
    size = draw(st.integers(4, 40))
    lines = [
        "---",
        "loop:",
        "  do:",
        f"    max_iterations: {draw(st.integers(2, 12))}",
        "    budget:",
        f"      size: {size}p",
    ]
    if draw(st.booleans()):
        lines += [
            "      watch:",
            f"        takeover_when: {draw(st.integers(10, 99))}",
            "        takeover_prompt: Land it now.",
        ]
    lines += ["---", "Read the pages."]
    return "\n".join(lines) + "\n", draw(st.integers(1, 40)), draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(job=jobs())
def test_counting_clearing_and_cutting_never_pass_an_allotment(start, job):
    text, page_kb, adversarial = job
    run = start(text, name=f"fit{Run.objects.count()}")
    folder = Path(run.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.txt").write_text("word " * (page_kb * 205))
    reads = [{"text": "reading", "tools": [tool("read_result", filename="big.txt"), tool("list_results")]}]
    model = FakeModel(task=reads, wrap_up=[{"text": "landed"}], judge=["YES\nok"], adversarial=adversarial)
    run = drive(run, model)
    plan = run.plan
    assert run.state == "finished", run.cause
    assert run.tokens_counted == sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))
    assert run.tokens_counted <= plan["worst_tokens"]
    for p in Pass.objects.filter(run=run):
        assert sum(s.counted_tokens for s in p.steps.filter(leg="task")) <= plan["split"]["task"]["tokens"]
        if plan["split"]["takeover"]:
            assert sum(s.counted_tokens for s in p.steps.filter(leg="wrap-up")) <= plan["split"]["takeover"]["tokens"]


@given(text=st.text(min_size=0, max_size=3000), chars=st.integers(0, 4000))
def test_a_cut_result_keeps_its_head_and_says_it_was_cut(text, chars):
    results = [{"type": "tool_result", "tool_use_id": "t", "content": text, "is_error": False}]
    cut = fitting.cut_results(results, chars)
    assert results[0]["content"] == text  # the caller's results are untouched
    after = cut[0]["content"]
    if chars == 0:
        assert after == text
        return
    head, _, marker = after.rpartition("\n")
    assert text.startswith(head) and marker.startswith("[cut: ") and "to fit the budget left" in marker
    assert len(after) <= max(len(text) - chars, 0) + len(marker) + 1


def test_earlier_results_are_cleared_oldest_first_and_say_so():
    long, short = "x" * 5000, "short"
    messages = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": long}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "b", "content": short},
                {"type": "tool_result", "tool_use_id": "c", "content": long},
            ],
        },
    ]
    cleared, changed = clear_old_results(messages, 100)
    assert changed == {0} and cleared > 4000
    assert "5,000 characters) was cleared to fit the budget left" in messages[0]["content"][0]["content"]
    assert messages[2]["content"][1]["content"] == long  # only as much as asked, oldest first


def test_the_reminder_says_what_is_left_in_the_recipes_units():
    said = reminder("/out", left=6200, allotment=12000, wrap_up_next=True)
    assert "6.2p" in said and "12p" in said and "wrap-up prompt takes the wheel" in said
    assert reminder("/out") == "Continue from where you stopped; save all result files into /out."


JUDGED = """
---
loop:
  do:
    max_iterations: 3
    budget:
      size: 12p
  while:
    max_iterations: 2
    budget: 24p
    prompts:
      until: The report lists twenty sources.
---
Write the report.
"""


@pytest.mark.parametrize("exact", [True, False])
def test_the_judge_reads_a_20_kb_result_by_its_count_not_its_bytes(start, exact):
    run = start(JUDGED, name=f"judged-{str(exact).lower()}")
    report = "A source, with a line about why it matters. " * 460  # ~20 KB
    model = FakeModel(
        task=[
            {"text": "Writing.", "tools": [tool("save_result", filename="report.md", content=report)]},
            {"text": "Done."},
        ],
        judge=["YES\ntwenty sources"],
    )

    def armed_for(r):
        armed = arm_run(r, model=model)
        armed.exact_counts = exact
        return armed

    worker.execute(run.pk, armed_for)
    run.refresh_from_db()
    if exact:
        assert run.cause == "fulfilled", run.cause
        assert run.tokens_counted <= run.plan["outer_tokens"]
    else:
        assert run.cause == "budget exhausted"  # 20 KB bound at 20,000+ tokens: no room left
