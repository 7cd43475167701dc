"""The pure parts of `python -m bench.fork`: the recipe, the fake model, the figures and the lines
it prints. The benchmark itself (three coding runs against the fake server, a 2,000-file copy)
stays out of the suite."""

from bench.fork import FORK_FROM, PASSES, RECIPE, STEPS, Leg, Points, Saved, report, respond
from catalogue.recipe import parse_recipe


def test_the_recipe_is_a_coding_recipe_of_six_passes_forked_from_the_fourth():
    spec = parse_recipe(RECIPE, path="forked.md", kind="task")
    assert spec.workdir is not None and spec.loop_while.max_iterations == PASSES == 6
    assert FORK_FROM == 4


def test_the_fake_model_runs_its_steps_then_answers_and_the_judge_always_says_no():
    first = {"role": "user", "content": "Add a line to log.txt for this pass."}
    turn = [{"role": "assistant", "content": "x"}, {"role": "user", "content": "ok"}]
    replies = [respond({"messages": [first, *turn * done]}) for done in range(STEPS + 1)]
    assert [r["tool_calls"][0]["name"] for r in replies[:STEPS]] == ["bash"] * STEPS
    assert "log.txt" in replies[0]["tool_calls"][0]["input"]["command"]
    assert replies[STEPS] == {"text": "Done: the line is in the log."}
    judged = respond({"system": [{"type": "text", "text": "You are an independent judge."}], "messages": [first]})
    assert judged["text"].startswith("NO\n")


def test_the_saving_is_running_again_minus_the_fork_and_the_last_line_says_it():
    parent = Leg("parent", [1, 2, 3, 4, 5, 6], 6_000, 6.0, "unfulfilled")
    fork = Leg("fork from pass 4", [5, 6], 2_000, 2.5, "unfulfilled")
    again = Leg("from the start again", [1, 2, 3, 4, 5, 6], 5_500, 6.5, "unfulfilled")
    saved = Saved(parent=parent, fork=fork, again=again)
    assert saved.tokens == 3_500 and saved.seconds == 4.0
    points = Points(files=2_000, passes=20, snapshot_ms=25.04, point_ms=5.26, point_bytes=196.4, snapshot_bytes=8_000)
    lines = report(saved, points)
    assert lines[-1] == "fork_saved_tokens=3500 point_ms=5.3 point_bytes=196"
    assert any("passes 5-6" in line and "2,000 tokens" in line for line in lines)
    assert any("saved 3,500 tokens and 4.00 s (64% of" in line for line in lines)
