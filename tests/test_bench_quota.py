"""The pure parts of `python -m bench.quota`: the greedy model, the run plan, the overshoot
and the lines it prints. The benchmark itself (qclusters, PostgreSQL, Redis) stays out of the
suite."""

from bench.quota import (
    SHAPES,
    Result,
    last_line,
    overshoot,
    plan_runs,
    recipe_text,
    respond,
    tag_of,
    third,
)
from catalogue.recipe import parse_recipe

TOOLS = [{"name": "save_result"}]


def task_body(*turns, first="Keep the notes of quota-run-03 (notes of 500 bytes).", max_tokens=8192):
    messages = [{"role": "user", "content": [{"type": "text", "text": first}]}, *turns]
    return {"tools": TOOLS, "max_tokens": max_tokens, "messages": messages}


def test_the_greedy_model_spends_all_of_max_tokens_and_saves_notes_of_the_size_asked():
    reply = respond(task_body(max_tokens=3319))
    assert reply["output_tokens"] == 3319
    saved = reply["tool_calls"][0]["input"]
    assert saved["filename"] == "notes.md"
    assert len(saved["content"]) == 500 and "quota-run-03, step 1" in saved["content"]
    turn = [{"role": "assistant", "content": [{"type": "text", "text": "x"}]}, {"role": "user", "content": "ok"}]
    assert "step 2" in respond(task_body(*turn))["tool_calls"][0]["input"]["content"]


def test_the_greedy_judge_never_says_yes_and_spends_its_cap_too():
    judge = {"max_tokens": 256, "messages": [{"role": "user", "content": "quota-run-03: the notes are done."}]}
    assert respond(judge) == {"text": "NO\nthe notes are not done yet", "output_tokens": 256}


def test_a_request_is_tagged_by_the_run_its_recipe_names():
    assert tag_of(task_body()) == "quota-run-03"
    assert tag_of({"messages": [{"role": "user", "content": "nothing"}]}) is None


def test_the_runs_are_distinct_recipes_of_every_shape_in_a_seeded_order():
    runs = plan_runs(40, seed=7)
    assert len({name for name, _, _ in runs}) == len({tag for _, tag, _ in runs}) == 40
    assert {shape for _, _, shape in runs} == set(SHAPES)
    assert plan_runs(40, seed=7) == runs and plan_runs(40, seed=8) != runs


def test_every_shape_makes_a_recipe_with_its_budget_passes_and_tag():
    for shape, (size, passes, note_bytes) in SHAPES.items():
        text = recipe_text("quota-run-11", shape)
        spec = parse_recipe(text, path="quota-11.md", kind="task", name="quota-11")
        assert spec.loop_while.max_iterations == passes
        assert f"size: {size}" in text and f"notes of {note_bytes} bytes" in text
        assert tag_of({"m": text}) == "quota-run-11"


def test_overshoot_counts_past_each_quota_alone():
    limits = {"quota-run-01": 100, "quota-run-02": 100}
    assert overshoot({"quota-run-01": 100, "quota-run-02": 40}, limits) == 0
    # one quota's room does not excuse another's overshoot
    assert overshoot({"quota-run-01": 130, "quota-run-02": 10}, limits) == 30
    assert third(300) == 100 and third(2) == 1


def test_the_last_line_is_postgres_installation_with_the_worst_overshoot_of_all():
    pg = Result("postgres", "installation", 40, quota_tokens=1000, spent_tokens=990, paused_on_quota=12)
    recipe = Result("postgres", "recipe", 40, quota_tokens=1000, spent_tokens=1020, overshoot_tokens=20)
    lite = Result("sqlite", "installation", 40, quota_tokens=1000, spent_tokens=900)
    assert last_line([lite, pg]) == (
        "runs=40 quota_tokens=1000 spent_tokens=990 overshoot_tokens=0 paused_on_quota=12 used_fraction=0.990"
    )
    assert "overshoot_tokens=20 " in last_line([pg, recipe, lite])
    assert last_line([lite]).startswith("runs=40 quota_tokens=1000 spent_tokens=900 ")
    assert pg.clean and not recipe.clean and not Result("sqlite", "recipe", 8, in_flight=1).clean
