"""rysh's current recipe keys (docs/recipes.md): `loop.do.effort`, `loop.do.auto_approve`,
`loop.do.budget.watch.model`/`effort`/`floor`, `loop.while.model`/`effort`, read, stored in the
spec, and refused at their line with what was expected."""

import textwrap

import pytest

from budgets.plan import DEFAULT_FLOOR, Allotment, Floor
from budgets.units import BOOK, PAGE
from catalogue.recipe import RecipeError, parse_recipe
from runs.arming import apply_overrides

PATH = ".rysh/automations/tasks/job.md"


def recipe(frontmatter: str) -> str:
    return f"---\n{textwrap.dedent(frontmatter).strip()}\n---\nDo the thing.\n"


def spec_of(frontmatter: str):
    return parse_recipe(recipe(frontmatter), path=PATH)


def errors(frontmatter: str) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(recipe(frontmatter), path=PATH)
    return [str(issue) for issue in caught.value.issues]


LOOP = """
    model: claude-opus-4-7
    effort: low
    loop:
      do:
        effort: high
        auto_approve: false
        budget:
          size: 3b
          watch:
            takeover_prompt: Save what you have.
            model: claude-sonnet-5
            effort: medium
            floor:
              trigger_iterations: 20
              trigger_duration: 30s
              trigger_size: 50p
              iterations: 40
              duration: 7m
              size: 2b
      while:
        model: claude-opus-4-7
        effort: low
        prompts:
          until: summary.md exists
"""


def test_it_reads_every_key_into_the_spec():
    spec = spec_of(LOOP)
    do = spec.do
    assert (do.effort, do.effort_line) == ("high", 6)
    assert do.auto_approve is False
    assert (do.watch_model, do.watch_effort, do.watch_effort_line) == ("claude-sonnet-5", "medium", 13)
    assert do.floor == Floor(trigger=Allotment(20, 30, 50 * PAGE), raise_to=Allotment(40, 7 * 60, 2 * BOOK))
    assert (spec.loop_while.judge_model, spec.loop_while.effort, spec.loop_while.effort_line) == (
        "claude-opus-4-7",
        "low",
        23,
    )
    # the legs: the task's effort wins over the top level; the wrap-up has its own model and effort
    assert (spec.task_effort, spec.wrapup_model, spec.wrapup_effort) == ("high", "claude-sonnet-5", "medium")
    assert spec.judge == "claude-opus-4-7"


def test_without_the_keys_the_spec_is_as_before():
    spec = spec_of("loop:\n  do:\n    max_iterations: 30\n")
    assert (spec.do.effort, spec.do.auto_approve, spec.do.watch_model, spec.do.watch_effort) == (None, True, None, None)
    assert spec.do.floor == DEFAULT_FLOOR and spec.loop_while.effort is None
    assert (spec.task_effort, spec.wrapup_model, spec.wrapup_effort) == (None, None, None)


def test_the_wrap_up_falls_back_to_the_task_legs_model_and_effort():
    spec = spec_of("model: claude-opus-4-7\nloop:\n  do:\n    effort: medium\n")
    assert (spec.wrapup_model, spec.wrapup_effort) == ("claude-opus-4-7", "medium")


def test_legacy_step_takes_the_same_keys():
    spec = spec_of("model: claude-opus-4-7\nstep:\n  effort: low\n  auto_approve: false\n")
    assert (spec.do.effort, spec.do.auto_approve) == ("low", False)


def test_a_floor_sets_only_what_it_names():
    spec = spec_of("loop:\n  do:\n    budget:\n      watch:\n        floor:\n          iterations: 150\n")
    assert spec.do.floor == Floor(trigger=DEFAULT_FLOOR.trigger, raise_to=Allotment(150, 5 * 60, BOOK))


def test_a_trigger_above_its_floor_value_is_fine():
    floor = "loop:\n  do:\n    budget:\n      watch:\n        floor: {trigger_iterations: 500, iterations: 10}\n"
    assert spec_of(floor).do.floor.trigger.steps == 500


def test_while_model_wins_over_judge_model_and_the_check_names_both_lines():
    spec = spec_of("loop:\n  while:\n    judge_model: claude-haiku-5-5\n    model: claude-opus-4-7\n")
    assert spec.judge == "claude-opus-4-7"
    [warning] = [w for w in spec.warnings if "judge" in w]
    assert warning.startswith("job.md:5 loop.while.model: both loop.while.model (line 5: claude-opus-4-7)")
    assert "loop.while.judge_model (line 4: claude-haiku-5-5)" in warning and "loop.while.model wins" in warning


def test_judge_model_alone_still_works():
    assert spec_of("loop:\n  while:\n    judge_model: claude-haiku-5-5\n").judge == "claude-haiku-5-5"


@pytest.mark.parametrize(
    "frontmatter, expected",
    [
        (
            "loop:\n  do:\n    effort: extreme\n",
            "job.md:4 loop.do.effort: expected low or medium or high, got 'extreme'",
        ),
        (
            "loop:\n  do:\n    effort: xhigh\n",
            "job.md:4 loop.do.effort: expected low or medium or high, got 'xhigh': rysh's xhigh is not sent",
        ),
        ("step:\n  effort: max\n", "job.md:3 step.effort: expected low or medium or high, got 'max'"),
        ("loop:\n  do:\n    auto_approve: yes\n", "job.md:4 loop.do.auto_approve: expected true or false, got yes"),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        model: ''\n",
            "job.md:6 loop.do.budget.watch.model: expected a non-empty text",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        effort: 3\n",
            "job.md:6 loop.do.budget.watch.effort: expected low or medium or high, got 3",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        floor: 5m\n",
            "job.md:6 loop.do.budget.watch.floor: expected a mapping with keys trigger_iterations",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        floor: {iterations: 0}\n",
            "job.md:6 loop.do.budget.watch.floor.iterations: expected a whole number of at least 1, got 0",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        floor: {trigger_duration: soon}\n",
            "job.md:6 loop.do.budget.watch.floor.trigger_duration: expected a duration",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        floor: {size: -1b}\n",
            "job.md:6 loop.do.budget.watch.floor.size: expected a budget size",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        floor: {trigger_size: lots}\n",
            "job.md:6 loop.do.budget.watch.floor.trigger_size: expected a budget size",
        ),
        (
            "loop:\n  do:\n    budget:\n      watch:\n        floor: {iteration: 5}\n",
            "job.md:6 loop.do.budget.watch.floor.iteration: unknown key 'iteration' (did you mean 'iterations'?)",
        ),
        ("loop:\n  while:\n    effort: [low]\n", "job.md:4 loop.while.effort: expected low or medium or high"),
        ("loop:\n  while:\n    model: 5\n", "job.md:4 loop.while.model: expected a non-empty text, got 5"),
    ],
)
def test_it_refuses_a_wrong_value_at_its_line(frontmatter, expected):
    found = errors(frontmatter)
    assert any(issue.startswith(expected) for issue in found), found


@pytest.mark.parametrize(
    "frontmatter, line, field",
    [
        ("loop:\n  do:\n    model: claude-sonnet-4-6\n    effort: high\n", 5, "loop.do.effort"),
        ("model: claude-haiku-4-5-20251001\nloop:\n  do:\n    effort: low\n", 5, "loop.do.effort"),
        (
            "model: claude-opus-4-7\nloop:\n  do:\n    budget:\n      watch:\n        model: claude-sonnet-4-6\n"
            "        effort: low\n",
            8,
            "loop.do.budget.watch.effort",
        ),
        ("loop:\n  while:\n    model: claude-haiku-4-5\n    effort: low\n", 5, "loop.while.effort"),
        ("judge_model: claude-sonnet-4-6\nloop:\n  while:\n    effort: low\n", 5, "loop.while.effort"),
    ],
)
def test_an_effort_for_a_pinned_model_that_takes_none_is_refused_at_its_line(frontmatter, line, field):
    [issue] = errors(frontmatter)
    assert issue.startswith(f"job.md:{line} {field}: ") and "does not take an effort setting" in issue


def test_the_top_level_effort_is_not_refused_when_the_do_effort_replaces_it():
    # loop.do.effort wins for the task leg, so the top-level one is never sent to this model
    spec = spec_of("model: claude-opus-4-7\neffort: low\nloop:\n  do:\n    effort: high\n")
    assert spec.task_effort == "high"


@pytest.mark.parametrize(
    "frontmatter, expected",
    [
        ("effort_x: 1\n", "unknown key 'effort_x' (did you mean 'effort'?)"),
        ("auto_approve: false\n", "unknown key 'auto_approve' (it belongs under loop.do)"),
        ("floor:\n  iterations: 5\n", "unknown key 'floor' (it belongs under loop.do.budget.watch)"),
        (
            "loop:\n  do:\n    trigger_size: 5p\n",
            "unknown key 'trigger_size' (it belongs under loop.do.budget.watch.floor)",
        ),
        ("humanoid: assistant\n", "unknown key 'humanoid' (it belongs under notify)"),
        ("loop:\n  do:\n    auto_aprove: false\n", "unknown key 'auto_aprove' (did you mean 'auto_approve'?)"),
    ],
)
def test_a_slip_is_pointed_home(frontmatter, expected):
    assert any(expected in issue for issue in errors(frontmatter))


def test_a_forks_effort_replaces_the_task_legs_own():
    spec = apply_overrides(spec_of("model: claude-opus-4-7\nloop:\n  do:\n    effort: high\n"), {"effort": "low"})
    assert spec.task_effort == "low"
