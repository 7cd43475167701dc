"""The wrap-up share's floor from the recipe (`loop.do.budget.watch.floor`, docs/running-loops.md):
the plan holds the share to the recipe's floor, and a recipe without floor keys plans exactly as
with the built-in one."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from budgets.plan import DEFAULT_FLOOR, Allotment, Floor, resolve, split_pass
from budgets.units import BOOK, PAGE
from catalogue.recipe import parse_recipe
from catalogue.spec import DoSpec, WhileSpec

allotments = st.builds(Allotment, st.integers(0, 10**4), st.integers(0, 10**6), st.integers(0, 10**9))
positive = st.builds(Allotment, st.integers(1, 10**4), st.integers(1, 10**6), st.integers(1, 10**9))
floors = st.builds(Floor, trigger=positive, raise_to=positive)


def built_in_floor(share: Allotment) -> Allotment:
    """The floor as it was before recipes could set one: 50 steps / 1m / 60p -> 100 / 5m / 1b."""
    if share.steps < 50 or share.seconds < 60 or share.tokens < 60 * PAGE:
        return Allotment(max(share.steps, 100), max(share.seconds, 300), max(share.tokens, BOOK))
    return share


@given(allotments, st.integers(10, 99), floors)
def test_a_floored_share_is_never_below_the_floor(ceiling, percent, floor):
    split = split_pass(ceiling, percent, has_takeover=True, floor=floor)
    raw, share = split.raw_takeover, split.takeover
    assert share.steps >= raw.steps and share.seconds >= raw.seconds and share.tokens >= raw.tokens
    thin = raw.steps < floor.trigger.steps or raw.seconds < floor.trigger.seconds or raw.tokens < floor.trigger.tokens
    assert split.floored == (thin and share != raw)
    if thin:
        up = floor.raise_to
        assert share.steps >= up.steps and share.seconds >= up.seconds and share.tokens >= up.tokens
        assert share == Allotment(max(raw.steps, up.steps), max(raw.seconds, up.seconds), max(raw.tokens, up.tokens))
    else:
        assert share == raw
    assert split.task + raw == ceiling  # the floor never takes from the task's share


@given(allotments, st.integers(10, 99))
def test_without_floor_keys_the_split_is_the_built_in_one(ceiling, percent):
    split = split_pass(ceiling, percent, has_takeover=True)
    assert split.takeover == built_in_floor(split.raw_takeover)
    assert split.floor == DEFAULT_FLOOR


@given(
    st.integers(1, 500),
    st.integers(1, 200),
    st.integers(1, 500),
    st.integers(10, 99),
    st.one_of(st.none(), st.integers(1, 100)),
)
def test_a_recipe_without_floor_keys_plans_as_before(steps, minutes, pages, percent, while_pages):
    loop_while = (
        "" if while_pages is None else f"  while:\n    budget: {while_pages}b\n    prompts:\n      until: done\n"
    )
    text = (
        f"---\nloop:\n  do:\n    max_iterations: {steps}\n    max_duration: {minutes}m\n    budget:\n"
        f"      size: {pages}p\n      watch:\n        takeover_when: {percent}\n        takeover_prompt: Save.\n"
        f"{loop_while}---\nGo.\n"
    )
    spec = parse_recipe(text, path=".rysh/automations/tasks/job.md")
    plan = resolve(spec.do, spec.loop_while)
    assert spec.do.floor == DEFAULT_FLOOR
    assert plan.split.takeover == built_in_floor(plan.split.raw_takeover)
    explicit = dataclasses.replace(spec.do, floor=Floor())
    assert resolve(explicit, spec.loop_while) == plan


@given(floors, st.integers(1, 300), st.integers(60, 3600))
def test_the_plan_applies_the_recipes_floor(floor, steps, seconds):
    do = DoSpec(max_iterations=steps, max_duration=seconds, takeover_prompt="Save.", floor=floor)
    plan = resolve(do, WhileSpec())
    assert plan.split.floor == floor
    assert plan.split.takeover == split_pass(plan.per_pass, do.takeover_when, True, floor).takeover
    assert plan.worst_tokens >= plan.split.takeover.tokens


def test_the_documented_example_with_a_floor_of_its_own():
    """300 steps / 7m / 3b at 90 reserves 30 / 42s / 60p: under a 40-step trigger, raised to 40 / 2m / 100p."""
    floor = Floor(trigger=Allotment(40, 30, 50 * PAGE), raise_to=Allotment(40, 120, 100 * PAGE))
    do = DoSpec(max_iterations=300, max_duration=7 * 60, budget_size=3 * BOOK, takeover_prompt="Save.", floor=floor)
    split = resolve(do, WhileSpec()).split
    assert split.raw_takeover == Allotment(30, 42, 60 * PAGE)
    assert split.takeover == Allotment(40, 120, 100 * PAGE) and split.floored
