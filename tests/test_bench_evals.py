"""The pure parts of `python -m bench.evals`: the recipe and its cases, the fake model, the
all-parallel ideal and the lines it prints. The benchmark itself (a qcluster) stays out of the
suite."""

from bench.evals import CASE_TAG, STEPS, Figures, case_files, ideal_seconds, recipe_text, respond
from catalogue.recipe import parse_recipe
from evals.format import read_cases


def test_the_recipe_parses_on_both_sides_and_the_change_edits_only_its_prompt():
    a = parse_recipe(recipe_text("A"), path="bench-eval.md", kind="task")
    b = parse_recipe(recipe_text("B"), path="bench-eval.md", kind="task")
    assert a.do == b.do and a.prompt != b.prompt and "variant B" in b.prompt


def test_every_case_is_valid_and_every_other_has_a_rubric():
    tree = {}
    for index in range(1, 5):
        tree.update({f"evals/{k}": v.encode() for k, v in case_files(index).items()})
    cases = read_cases(tree, "evals")
    assert [c.name for c in cases] == ["case-01", "case-02", "case-03", "case-04"]
    assert not any(c.broken for c in cases)
    assert [c.rubric is not None for c in cases] == [False, True, False, True]


def test_the_fake_model_saves_notes_then_answers_and_the_judge_says_yes():
    first = {"role": "user", "content": "Topic: bench-case-07, the tides."}
    turn = [{"role": "assistant", "content": "x"}, {"role": "user", "content": "ok"}]
    reply = respond({"messages": [first]})
    assert reply["tool_calls"][0]["input"]["content"].startswith("bench-case-07, step 1")
    done = respond({"messages": [first, *turn * STEPS]})
    assert done == {"text": "The notes of bench-case-07 are done."}
    assert respond({"system": "You are an independent judge ...", "messages": [first]})["text"].startswith("YES")
    assert CASE_TAG.search("Topic: bench-case-07").group(0) == "bench-case-07"


def test_the_ideal_is_the_longest_case_and_overshoot_counts_both_the_ledger_and_the_server():
    assert ideal_seconds([(0, 2), (1, 4), (3, 3.5)]) == 3
    figures = Figures(cases=2, workers=2, wall_s=6.0, ideal_s=3.0, result_grade_s=0.25)
    figures.counted, figures.ceilings = {"main": 90, "change": 120}, {"main": 100, "change": 100}
    figures.passed, figures.billed = {"main": "2/2", "change": "1/2"}, 210
    assert figures.overshoot_tokens == 20 + 10
    assert figures.last_line() == "suite_efficiency=0.50 overshoot_tokens=30 result_grade_s=0.25"
    assert any("main: tokens" in line and "90 of 100" in line for line in figures.lines())
