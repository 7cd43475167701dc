"""The offline scripted model: turn order, legs, judge, usage invariants, validation."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.ports import ModelCancelled, ModelError, ModelRequest
from agents.scripted import ScriptedModel, ScriptError
from runs.engine.verdicts import judge_message

DEMO = Path(__file__).resolve().parents[2] / "demo/recipes/.rysh/automations/tasks/reading-list.script.yaml"
SCRIPT = {
    "passes": [
        {
            "task": [
                {
                    "text": "Searching.",
                    "tool_calls": [{"name": "save_result", "input": {"filename": "a.md", "content": "# A"}}],
                },
                {"text": "All saved."},
            ],
            "wrap-up": [
                {"tool_calls": [{"name": "save_result", "input": {"filename": "a.md", "content": "PARTIAL"}}]},
                {"text": "Saved the PARTIAL list."},
            ],
            "judge": "NO\nOnly three of five.",
        },
        {
            "task": [{"text": "Burning.", "tool_calls": [{"name": "fetch", "input": {"url": "u"}}]}],
            "repeat_last": True,
            "judge": "YES\nComplete.",
        },
    ]
}


def request(messages=None, **overrides) -> ModelRequest:
    fields = dict(
        model="scripted",
        system="Be brief.",
        tools=[{"name": "save_result"}],
        messages=messages or [{"role": "user", "content": "go"}],
        max_tokens=4000,
        deadline=time.monotonic() + 10,
    )
    fields.update(overrides)
    return ModelRequest(**fields)


def converse(model, n, *, leg_start=0, messages=None, **overrides):
    """n turns of one leg, feeding each reply back as the real engine would."""
    messages = list(messages or [{"role": "user", "content": "go"}])
    replies = []
    for _ in range(n):
        reply = model.complete(request(messages, leg_start=leg_start, **overrides))
        replies.append(reply)
        results = [{"type": "tool_result", "tool_use_id": c["id"], "content": "ok"} for c in reply.tool_calls]
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": results or "continue"},
        ]
    return replies, messages


def test_label_never_pretends_to_be_claude():
    assert ScriptedModel(SCRIPT).label == "scripted (offline demo model)"


def test_task_turns_in_order_then_done():
    replies, _ = converse(ScriptedModel(SCRIPT), 3)
    assert [r.text for r in replies] == ["Searching.", "All saved.", "Done."]
    assert [r.stop_reason for r in replies] == ["tool_use", "end_turn", "end_turn"]
    call = replies[0].tool_calls[0]
    assert (call["name"], call["input"]) == ("save_result", {"filename": "a.md", "content": "# A"})


def test_wrap_up_leg_counts_from_leg_start():
    model = ScriptedModel(SCRIPT)
    _, messages = converse(model, 2)
    messages.append({"role": "user", "content": "Budget is out: save what exists, label it PARTIAL."})
    replies, _ = converse(model, 2, leg_start=len(messages) - 1, messages=messages, purpose="wrap-up")
    assert replies[0].tool_calls[0]["input"]["content"] == "PARTIAL"
    assert replies[1].text == "Saved the PARTIAL list."


def test_repeat_last_burns_on():
    replies, _ = converse(ScriptedModel(SCRIPT), 5, pass_number=2)
    assert all(r.text == "Burning." and r.stop_reason == "tool_use" for r in replies)
    ids = [r.tool_calls[0]["id"] for r in replies]
    assert len(set(ids)) == 5  # unique even when the turn repeats


def test_judge_reply_per_pass_and_beyond_the_list():
    model = ScriptedModel(SCRIPT)
    assert model.complete(request(purpose="judging", pass_number=1)).text == "NO\nOnly three of five."
    assert model.complete(request(purpose="judging", pass_number=2)).text == "YES\nComplete."
    assert model.complete(request(purpose="judging", pass_number=7)).text == "YES\nComplete."
    assert model.complete(request(pass_number=9)).text == "Burning."  # the last pass's task too


def test_a_judge_if_reply_answers_a_goal_that_holds_its_words():
    """A re-judge of an edited until: offline: the script may answer another goal otherwise."""
    script = {
        "passes": [
            {
                "judge": "YES\nFive entries.",
                "judge_if": [{"goal_has": "seven  Entries", "judge": "NO\nFive, not seven."}],
            }
        ]
    }
    model = ScriptedModel(script)

    def judged(goal: str) -> str:
        message = judge_message(goal, ("list.md", "five entries"))
        return model.complete(
            request([{"role": "user", "content": [{"type": "text", "text": message}]}], purpose="judging")
        ).text

    assert judged("The list has at least five entries.") == "YES\nFive entries."
    assert judged("The list has at least SEVEN\n  entries.") == "NO\nFive, not seven."  # any case, any spacing
    assert judged("") == "YES\nFive entries."


def test_the_demo_script_flips_pass_2_for_a_goal_of_seven_entries():
    model = ScriptedModel.from_file(DEMO)
    message = judge_message("The reading list has at least seven entries.", ("reading-list.md", "…"))
    reply = model.complete(request([{"role": "user", "content": message}], purpose="judging", pass_number=2)).text
    assert reply.startswith("NO\n")


def test_missing_judge_is_a_model_error():
    model = ScriptedModel({"passes": [{"task": [{"text": "hi"}]}]}, source="s.yaml")
    with pytest.raises(ModelError, match="s.yaml: pass 1 has no judge reply"):
        model.complete(request(purpose="judging"))


def test_turn_index_is_stateless_across_instances():
    _, messages = converse(ScriptedModel(SCRIPT), 1)
    fresh = ScriptedModel(SCRIPT)  # another process, resuming from the checkpoint
    assert fresh.complete(request(messages)).text == "All saved."


def test_tool_ids_are_stable_and_unique_across_legs():
    a, _ = converse(ScriptedModel(SCRIPT), 1)
    b, _ = converse(ScriptedModel(SCRIPT), 1)
    wrap = ScriptedModel(SCRIPT).complete(request(purpose="wrap-up"))
    assert a[0].tool_calls[0]["id"] == b[0].tool_calls[0]["id"]
    assert wrap.tool_calls[0]["id"] != a[0].tool_calls[0]["id"]


def test_cache_read_grows_along_a_conversation():
    replies, _ = converse(ScriptedModel(SCRIPT), 3, pass_number=2)
    first, second, third = (r.usage for r in replies)
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    assert 0 < second.cache_read_tokens < third.cache_read_tokens
    assert third.context > second.context > first.context


def test_truncation_at_max_tokens():
    model = ScriptedModel({"passes": [{"task": [{"text": "word " * 100, "tool_calls": [{"name": "t", "input": {}}]}]}]})
    reply = model.complete(request(max_tokens=3))
    assert reply.stop_reason == "max_tokens" and reply.tool_calls == []
    assert reply.text == "word word wo" and reply.usage.output_tokens == 3


def test_cancel_is_polled():
    with pytest.raises(ModelCancelled):
        ScriptedModel(SCRIPT).complete(request(cancelled=lambda: True))


def test_latency_is_cancellable_and_bounded_by_the_deadline():
    slow = ScriptedModel(dict(SCRIPT, latency_seconds=30))
    flag = threading.Event()
    threading.Timer(0.2, flag.set).start()
    started = time.monotonic()
    with pytest.raises(ModelCancelled):
        slow.complete(request(cancelled=flag.is_set))
    assert time.monotonic() - started < 0.5
    with pytest.raises(ModelError, match="deadline"):
        slow.complete(request(deadline=time.monotonic() + 0.2))
    quick = ScriptedModel(dict(SCRIPT, latency_seconds=0.1))
    started = time.monotonic()
    quick.complete(request())
    assert time.monotonic() - started >= 0.1


def test_the_demo_script_loads_and_lands():
    assert ScriptedModel.from_file(DEMO).passes
    model = ScriptedModel(dict(yaml.safe_load(DEMO.read_text()), latency_seconds=0), source=str(DEMO))
    replies, _ = converse(model, 6)
    assert replies[-1].stop_reason == "tool_use"  # pass 1 burns its budget
    assert model.complete(request(purpose="judging")).text.startswith("NO")
    assert model.complete(request(purpose="judging", pass_number=2)).text.startswith("YES")


@pytest.mark.parametrize(
    "script, problem",
    [
        ([], "the script must be a mapping"),
        ({}, "passes: a non-empty list of passes is required"),
        ({"passes": [], "latency_seconds": 0}, "passes: a non-empty list"),
        ({"pases": []}, "unknown key 'pases'; did you mean 'passes'?"),
        ({"passes": [{"task": [{"text": "x"}]}], "latency_seconds": -1}, "latency_seconds: must be a number"),
        ({"passes": ["task"]}, "passes[0]: a pass must be a mapping"),
        ({"passes": [{"wrap_up": []}]}, "passes[0]: unknown key 'wrap_up'; did you mean 'wrap-up'?"),
        ({"passes": [{"task": {"text": "x"}}]}, "passes[0].task: must be a list of turns"),
        ({"passes": [{"task": [{}]}]}, "passes[0].task[0]: a turn needs text or tool_calls"),
        ({"passes": [{"task": [{"text": 3}]}]}, "passes[0].task[0].text: must be a string"),
        (
            {"passes": [{"task": [{"tool_calls": [{"input": {}}]}]}]},
            r"passes[0].task[0].tool_calls[0].name: a tool name",
        ),
        (
            {"passes": [{"task": [{"tool_calls": [{"name": "t", "input": [1]}]}]}]},
            "tool_calls[0].input: must be a mapping",
        ),
        ({"passes": [{"repeat_last": "yes"}]}, "passes[0].repeat_last: must be true or false"),
        ({"passes": [{"judge": ["NO"]}]}, "passes[0].judge: must be a string"),
        ({"passes": [{"judge_if": {"goal_has": "x"}}]}, "passes[0].judge_if: must be a list"),
        ({"passes": [{"judge_if": [{"goal_has": " ", "judge": "NO"}]}]}, "passes[0].judge_if[0].goal_has: the words"),
        ({"passes": [{"judge_if": [{"goal_has": "x", "judge": 1}]}]}, "passes[0].judge_if[0].judge: must be a string"),
        ({"passes": [{"judge_if": [{"goal": "x"}]}]}, "passes[0].judge_if[0]: unknown key 'goal'"),
    ],
)
def test_invalid_scripts_name_the_file_and_the_problem(script, problem):
    with pytest.raises(ScriptError) as err:
        ScriptedModel(script, source="demo.script.yaml")
    assert str(err.value).startswith("demo.script.yaml: ")
    assert problem in str(err.value)


def test_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.script.yaml"
    with pytest.raises(ScriptError, match="nope.script.yaml: cannot read the script"):
        ScriptedModel.from_file(missing)
    broken = tmp_path / "broken.script.yaml"
    broken.write_text("passes:\n  - task: [\n")
    with pytest.raises(ScriptError, match=r"broken.script.yaml: not valid YAML: .*line \d+"):
        ScriptedModel.from_file(broken)
    typo = tmp_path / "typo.script.yaml"
    typo.write_text("passes:\n  - task:\n      - txt: hi\n")
    with pytest.raises(ScriptError, match=r"typo.script.yaml: passes\[0\].task\[0\]: unknown key 'txt'"):
        ScriptedModel.from_file(typo)


# ---------------------------------------------------------------- usage invariants

text = st.text(max_size=200)
turns = st.lists(
    st.fixed_dictionaries(
        {"text": st.text(min_size=1, max_size=400)},
        optional={
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "name": st.sampled_from(["save_result", "fetch"]),
                        "input": st.dictionaries(st.sampled_from(["a", "b", "url"]), text, max_size=3),
                    }
                ),
                max_size=2,
            )
        },
    ),
    min_size=1,
    max_size=4,
)
scripts = st.builds(
    lambda task, wrap, judge, repeat: {
        "passes": [{"task": task, "wrap-up": wrap, "judge": judge, "repeat_last": repeat}]
    },
    turns,
    turns,
    text,
    st.booleans(),
)
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": text}), min_size=1, max_size=6
)


def request_bytes(req: ModelRequest) -> int:
    def compact(v):
        return len(json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode())

    return len(req.system.encode()) + compact(req.tools) + sum(compact(m) for m in req.messages)


@settings(max_examples=150, deadline=None)
@given(
    script=scripts,
    messages=messages,
    system=text,
    max_tokens=st.integers(1, 600),
    purpose=st.sampled_from(["task", "wrap-up", "judging"]),
    pass_number=st.integers(1, 3),
    calls=st.integers(1, 3),
)
def test_usage_invariants(script, messages, system, max_tokens, purpose, pass_number, calls):
    model = ScriptedModel(script)
    for n in range(calls):  # repeated and grown requests exercise the simulated cache
        req = request(messages[: n + 1], system=system, max_tokens=max_tokens, purpose=purpose, pass_number=pass_number)
        reply = model.complete(req)
        usage = reply.usage
        assert 1 <= usage.output_tokens <= max_tokens
        assert min(usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens) >= 0
        assert usage.context <= request_bytes(req)
        if reply.stop_reason == "max_tokens":
            assert reply.tool_calls == [] and usage.output_tokens == max_tokens
        else:
            assert usage.output_tokens * 4 >= len(
                json.dumps(reply.content, ensure_ascii=False, separators=(",", ":")).encode()
            )
