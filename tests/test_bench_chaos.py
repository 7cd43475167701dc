"""The pure parts of `python -m bench.chaos`: the fake model, the fault plan and the checks it
makes of the fake server's log."""

import random
from types import SimpleNamespace

from bench.chaos import (
    API_FAULTS,
    COMPLETE,
    Tally,
    double_driven,
    last_save_ok,
    leg_of,
    plan_faults,
    respond,
    server_overshoot,
    tag_of,
)

TOOLS = [{"name": "save_result"}]


def exchange(tag, started, ended):
    return SimpleNamespace(tag=tag, started=started, ended=ended)


def test_it_counts_calls_of_one_run_in_flight_at_once():
    log = [
        exchange("chaos-run-01", 0.0, 1.0),
        exchange("chaos-run-01", 1.0, 2.0),  # starts as the other ends: one after the other
        exchange("chaos-run-02", 0.5, 1.5),  # another run: no matter
        exchange("chaos-run-03", 0.0, 5.0),
        exchange("chaos-run-03", 1.0, 2.0),
        exchange("chaos-run-03", 4.0, None),  # still open at the end
        exchange(None, 0.0, 9.0),
    ]
    assert double_driven(log) == {"chaos-run-03": 2}


def test_it_tags_a_request_by_the_run_it_names():
    assert tag_of({"messages": [{"role": "user", "content": "notes of chaos-run-07"}]}) == "chaos-run-07"
    assert tag_of({"messages": [{"role": "user", "content": "nothing"}]}) is None


def task_body(*turns, first="Keep the notes of chaos-run-02."):
    return {"tools": TOOLS, "messages": [{"role": "user", "content": [{"type": "text", "text": first}]}, *turns]}


def save_turn(n, ok):
    call = {"type": "tool_use", "id": f"t{n}", "name": "save_result", "input": {}}
    result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "saved" if ok else "denied", "is_error": not ok}
    return [{"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]


def test_the_fake_model_saves_at_every_step_then_answers():
    first = respond(task_body(), steps=2)
    assert first["tool_calls"][0]["name"] == "save_result"
    assert "chaos-run-02" in first["tool_calls"][0]["input"]["content"]
    done = respond(task_body(*save_turn(1, True), *save_turn(2, True)), steps=2)
    assert done == {"text": "Done: the notes of chaos-run-02 are saved."}


def test_the_fake_model_saves_again_when_the_folder_refused():
    body = task_body(*save_turn(1, True), *save_turn(2, False))
    assert last_save_ok(body["messages"]) is False
    assert respond(body, steps=2)["tool_calls"][0]["name"] == "save_result"


def test_pass_two_marks_the_notes_complete_and_the_judge_sees_it():
    body = task_body(*save_turn(1, True), first="Keep the notes of chaos-run-02.\nThis is pass 2 of a loop.")
    content = respond(body, steps=2)["tool_calls"][0]["input"]["content"]
    assert COMPLETE in content
    judge = {"messages": [{"role": "user", "content": [{"type": "text", "text": content}]}]}
    assert respond(judge, steps=2)["text"].startswith("YES")
    draft = {"messages": [{"role": "user", "content": "chaos-run-02 draft"}]}
    assert respond(draft, steps=2)["text"].startswith("NO")
    assert leg_of(body) == (2, "task") and leg_of(judge) == (0, "judging")


def test_the_fault_plan_holds_every_kind_in_the_window():
    faults = plan_faults(random.Random(3), kills=5, window=100)
    kinds = [f.kind for f in faults]
    assert kinds.count("kill") == 5
    assert {"redis", "postgres", "unwritable"} <= set(kinds)
    assert sorted(f.detail for f in faults if f.kind == "api") == sorted(API_FAULTS)
    assert faults == sorted(faults) and all(0 < f.at < 100 for f in faults)
    assert plan_faults(random.Random(3), kills=5, window=100) == faults


def test_server_overshoot_counts_past_each_ceiling():
    plan = {"worst_tokens": 100, "outer_tokens": 80, "split": {"task": {"tokens": 30}}}
    assert server_overshoot({(1, "task"): 30, (0, "judging"): 40}, 70, plan) == 0
    assert server_overshoot({(1, "task"): 35, (2, "task"): 50}, 85, plan) == 5 + 5 + 20


def test_the_last_line():
    assert Tally(runs=8, landed=8).line() == (
        "runs=8 landed=8 overshoot_tokens=0 undercounted_tokens=0 double_driven=0 hung=0 lost_results=0"
    )
    assert Tally(runs=8, landed=8).clean and not Tally(runs=8, landed=7).clean
