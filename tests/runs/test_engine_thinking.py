"""Thinking, effort and the newer stop reasons, on the real anthropic SDK against the fake
Messages server (which refuses a request that drops or alters a thinking block it issued)."""

from pathlib import Path

import anthropic
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from runs import services, worker
from runs.models import LedgerEntry, Pass, RunEvent, Step
from runs.wiring import arm_run
from tests.fakes.anthropic_server import FakeAnthropic, fake_anthropic, judge_or  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

RECIPE = """---
model: claude-opus-4-7
effort: high
loop:
  do:
    max_iterations: 10
    budget:
      size: 1b
  while:
    max_iterations: 2
    prompts:
      until: summary.md exists
---
Write summary.md.
"""
THOUGHT = "The user wants a summary. I should save it first, then check it. " * 4
SAVE = {"name": "save_result", "input": {"filename": "summary.md", "content": "short"}}
LIST = {"name": "list_results", "input": {}}


@pytest.fixture
def recipe(recipe_file):
    return recipe_file(RECIPE, "summarise", script=None)


def run_it(recipe):
    run = services.run_start(kind="task", name_or_path=str(recipe), args=[])
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    return run


def task_requests(fake):
    return [r.json for r in fake.requests if "independent judge" not in str(r.json.get("system"))]


def test_it_keeps_its_thinking_across_tool_calls_with_effort_set(fake_anthropic, recipe):
    queue = judge_or(fake_anthropic)
    queue += [
        {"thinking": THOUGHT, "text": "Saving.", "tool_calls": [SAVE]},
        {"thinking": "Saved; now look.", "redacted_thinking": "EncryptedBlob==", "tool_calls": [LIST]},
        {"thinking": "All there.", "text": "Done: summary.md saved."},
    ]
    run = run_it(recipe)
    assert (run.state, run.cause) == ("finished", "fulfilled")  # the fake would 400 a dropped block
    sent = task_requests(fake_anthropic)
    assert all(body["output_config"] == {"effort": "high"} for body in sent)
    assert all(body["thinking"] == {"type": "adaptive"} for body in sent)  # never budget_tokens
    first_turn = sent[1]["messages"][1]["content"]
    assert first_turn[0]["type"] == "thinking" and first_turn[0]["thinking"] == THOUGHT
    second_turn = sent[2]["messages"][3]["content"]
    assert [b["type"] for b in second_turn[:2]] == ["thinking", "redacted_thinking"]
    assert second_turn[1]["data"] == "EncryptedBlob=="
    judge = [r.json for r in fake_anthropic.requests if r.json not in sent]
    assert judge and all("output_config" not in body for body in judge)  # the judge model takes none
    # thinking is output, billed at its full length: the step and the ledger keep what was billed
    steps = Step.objects.filter(run_pass__run=run, leg="task").order_by("number")
    billed = [e.usage["output_tokens"] for e in fake_anthropic.exchanges if e.usage][: len(steps)]
    assert [s.output_tokens for s in steps] == billed
    assert steps[0].output_tokens > len(THOUGHT) // 4
    assert run.tokens_counted == sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))
    assert [s.thinking_blocks for s in steps] == [1, 2, 1]
    # each call's reservation (input bound + max_tokens) held what it cost, thinking sent back included
    assert all(
        s.reserved_tokens - s.max_tokens >= s.input_tokens + s.cache_write_tokens + s.cache_read_tokens for s in steps
    )
    assert steps[0].thought == f"thought ~{len(THOUGHT.strip()) // 4 + 1} tokens"
    assert "thought ~" in RunEvent.objects.filter(run=run, kind="step").first().message


def test_the_fake_refuses_a_thinking_block_dropped_or_altered(fake_anthropic):
    fake_anthropic.reply(thinking="secret plan", tool_calls=[LIST])
    client = anthropic.Anthropic(max_retries=0)
    first = client.messages.create(
        model="claude-opus-4-7", max_tokens=500, messages=[{"role": "user", "content": "go"}]
    )
    assert first.content[0].type == "thinking" and first.content[0].signature
    thinking, call = first.content[0].to_dict(), first.content[1].to_dict()
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "[]"}]}
    for turn in ([call], [dict(thinking, thinking="another plan"), call]):
        messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": turn}, result]
        with pytest.raises(anthropic.BadRequestError, match="thinking"):
            client.messages.create(model="claude-opus-4-7", max_tokens=500, messages=messages)
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [thinking, call]}, result]
    assert client.messages.create(model="claude-opus-4-7", max_tokens=500, messages=messages).content
    with pytest.raises(anthropic.BadRequestError, match="effort"):
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=500, messages=messages[:1], output_config={"effort": "low"}
        )


def test_pause_turn_goes_on_with_the_same_turn(fake_anthropic, recipe):
    queue = judge_or(fake_anthropic)
    queue += [
        {"thinking": "Long search.", "text": "Searching…", "stop_reason": "pause_turn"},
        {"text": "Saving.", "tool_calls": [SAVE]},
        {"text": "Done."},
    ]
    run = run_it(recipe)
    assert run.cause == "fulfilled"
    resumed = task_requests(fake_anthropic)[1]["messages"]
    assert [m["role"] for m in resumed] == ["user", "assistant"]  # no new user text
    assert resumed[-1]["content"][0]["thinking"] == "Long search."
    assert Step.objects.get(run_pass__run=run, number=1).stop_reason == "pause_turn"


def test_a_refusal_ends_the_pass_and_says_so(fake_anthropic, recipe):
    queue = judge_or(fake_anthropic)
    queue += [{"text": "I can't help with that.", "stop_reason": "refusal"}]
    run = run_it(recipe)
    assert run.state == "finished" and "the model refused" in run.cause
    assert Pass.objects.get(run=run).task_stop == "refused"
    assert len(fake_anthropic.requests) == 1  # no judge: the run ends there


def test_a_full_context_window_is_a_budget_stop_and_the_wrap_up_takes_over(fake_anthropic, recipe):
    recipe.write_text(
        RECIPE.replace(
            "      size: 1b\n", "      size: 1b\n      watch:\n        takeover_prompt: Save what you have.\n"
        )
    )
    queue = judge_or(fake_anthropic)
    queue += [
        {"text": "Reading more…", "stop_reason": "model_context_window_exceeded"},
        {"text": "Saving.", "tool_calls": [SAVE]},
        {"text": "PARTIAL saved."},
    ]
    run = run_it(recipe)
    assert run.cause == "fulfilled"
    first = Pass.objects.get(run=run, number=1)
    assert (first.task_stop, first.takeover_used) == ("tokens", True)


def test_the_run_page_says_a_step_thought_but_not_what(fake_anthropic, recipe, settings):
    queue = judge_or(fake_anthropic)
    queue += [{"thinking": "PRIVATE-MUSING " * 8, "text": "Saving.", "tool_calls": [SAVE]}, {"text": "Done."}]
    run = run_it(recipe)
    user = User.objects.create_user("viewer-user", password="x")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "thought ~" in page and "PRIVATE-MUSING" not in page
    settings.RYSH_SHOW_THINKING = True
    assert "PRIVATE-MUSING" in client.get(f"/runs/{run.pk}/").content.decode()
    assert Path(run.output_dir, "summary.md").read_text() == "short"
