import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgets.plan import (
    FLOOR_SECONDS,
    FLOOR_STEPS,
    FLOOR_TOKENS,
    Allotment,
    judge_bound,
    redistribute,
    resolve,
    split_pass,
)
from budgets.units import BOOK, PAGE
from catalogue.spec import DoSpec, WhileSpec

GOAL = "the results file has a published URL"


def test_it_resolves_the_publishing_recipe_exactly_as_rysh_prints_it():
    do = DoSpec(max_iterations=150, max_duration=15 * 60, budget_size=4 * BOOK, takeover_prompt="land it")
    loop = WhileSpec(enabled=True, max_iterations=5, max_duration=15 * 60, budget=20 * BOOK, until=GOAL)
    assert resolve(do, loop).summary_lines() == [
        "loop enabled=true  maxIter=5",
        "perPass: tokens=800000  duration=15m0s  takeover=90",
        "outer:   tokensTotal=4000000  duration=0s",
    ]


@pytest.mark.parametrize(
    "loop, per_pass_seconds, per_pass_tokens, outer_seconds, outer_tokens",
    [
        (
            WhileSpec(max_iterations=5, max_duration=200 * 60, budget=20 * BOOK, until=GOAL),
            40 * 60,
            4 * BOOK,
            200 * 60,
            20 * BOOK,
        ),
        (
            WhileSpec(max_iterations=5, max_duration=40 * 60, budget=15 * BOOK, until=GOAL),
            8 * 60,
            3 * BOOK,
            40 * 60,
            15 * BOOK,
        ),
        (WhileSpec(max_iterations=5, max_duration=5 * 60, budget=2 * BOOK, until=GOAL), 7 * 60, 3 * BOOK, 0, 0),
    ],
)
def test_it_applies_rysh_budget_algebra(loop, per_pass_seconds, per_pass_tokens, outer_seconds, outer_tokens):
    plan = resolve(DoSpec(max_duration=7 * 60, budget_size=3 * BOOK), loop)
    assert (plan.per_pass.seconds, plan.per_pass.tokens) == (per_pass_seconds, per_pass_tokens)
    assert (plan.outer_seconds, plan.outer_tokens) == (outer_seconds, outer_tokens)


def test_it_warns_when_an_axis_is_disabled():
    plan = resolve(
        DoSpec(max_duration=7 * 60, budget_size=3 * BOOK),
        WhileSpec(max_iterations=5, max_duration=5 * 60, budget=2 * BOOK, until=GOAL),
    )
    assert any(
        w.startswith("tokens DISABLED: loop.while.budget 2b does not exceed one pass (3b)") for w in plan.warnings
    )
    assert any(
        w.startswith("duration DISABLED: loop.while.max_duration 5m does not exceed one pass (7m)")
        for w in plan.warnings
    )


def test_it_disables_a_missing_outer_axis_with_a_warning():
    plan = resolve(DoSpec(), WhileSpec(until=GOAL))
    assert (plan.outer_tokens, plan.outer_seconds) == (0, 0)
    assert any("tokens DISABLED: loop.while.budget is not set" in w for w in plan.warnings)


def test_it_splits_the_pass_at_the_takeover_mark():
    split = split_pass(Allotment(300, 20 * 60, 50_000), 90, has_takeover=True)
    assert split.task == Allotment(270, 18 * 60, 45_000)
    assert split.raw_takeover == Allotment(30, 2 * 60, 5_000)


def test_it_floors_a_thin_takeover_share_on_every_axis():
    split = split_pass(Allotment(300, 7 * 60, 3 * BOOK), 90, has_takeover=True)
    assert split.task == Allotment(270, 378, 540_000)
    assert split.raw_takeover == Allotment(30, 42, 60_000)
    assert split.takeover == Allotment(100, 5 * 60, 1 * BOOK)
    assert split.floored
    assert split.worst == Allotment(370, 378 + 300, 740_000)  # past the pass ceiling, on purpose


def test_it_keeps_axes_already_above_their_floor():
    split = split_pass(Allotment(300, 2 * 3600, 50 * BOOK), 90, has_takeover=True)
    # steps trigger the floor; time (12m) and tokens (5b) are already above theirs
    assert split.takeover == Allotment(100, 12 * 60, 5 * BOOK)


def test_it_gives_the_task_everything_without_a_takeover_prompt():
    plan = resolve(DoSpec(), WhileSpec())
    assert plan.split.task == plan.per_pass == Allotment(300, 20 * 60, 3 * BOOK)
    assert plan.split.takeover is None
    assert any("plain stop" in w for w in plan.warnings)


def test_it_runs_one_pass_without_a_goal_whatever_the_flags():
    plan = resolve(DoSpec(), WhileSpec(enabled=True, max_iterations=9, budget=40 * BOOK))
    assert (plan.loop_enabled, plan.passes, plan.outer_tokens, plan.judge_tokens) == (False, 1, 0, 0)
    assert plan.summary_lines()[0] == "loop enabled=false  maxIter=1"
    assert any(w.startswith("loop cannot run (no exit condition)") for w in plan.warnings)


def test_it_runs_one_pass_on_its_own_budget_when_disabled():
    plan = resolve(DoSpec(budget_size=3 * BOOK), WhileSpec(enabled=False, budget=20 * BOOK, until=GOAL))
    assert (plan.passes, plan.per_pass.tokens, plan.outer_tokens) == (1, 3 * BOOK, 0)


def test_it_counts_the_judge_in_the_worst_case():
    plan = resolve(DoSpec(budget_size=3 * BOOK), WhileSpec(max_iterations=2, until=GOAL))
    assert plan.judge_tokens == judge_bound(GOAL) > 48 * 1024
    assert plan.worst_tokens == 2 * (3 * BOOK + plan.judge_tokens)


def test_it_caps_the_worst_case_at_the_outer_total_floors_included():
    do = DoSpec(max_iterations=150, max_duration=15 * 60, budget_size=4 * BOOK, takeover_prompt="x")
    plan = resolve(do, WhileSpec(max_iterations=5, budget=20 * BOOK, until=GOAL))
    assert plan.split.worst.tokens == 720_000 + 200_000
    assert plan.worst_tokens == 20 * BOOK


def test_it_never_redistributes_to_less_than_one_page():
    assert redistribute(2 * PAGE, 1 * PAGE, 5, unit=PAGE) == (PAGE, 2 * PAGE)


# -- properties ---------------------------------------------------------------


def do_specs():
    return st.builds(
        DoSpec,
        max_iterations=st.integers(1, 2000),
        max_duration=st.integers(1, 24 * 3600),
        budget_size=st.integers(1, 4000).map(lambda p: p * PAGE),
        takeover_when=st.integers(10, 99),
        takeover_prompt=st.one_of(st.none(), st.just("land the plane")),
    )


def while_specs():
    return st.builds(
        WhileSpec,
        enabled=st.sampled_from([None, True, False]),
        max_iterations=st.integers(1, 20),
        max_duration=st.one_of(st.none(), st.integers(1, 48 * 3600)),
        budget=st.one_of(st.none(), st.integers(1, 80_000).map(lambda p: p * PAGE)),
        until=st.one_of(st.none(), st.text(min_size=1, max_size=200)),
    )


@given(st.integers(1, 10**9), st.integers(1, 10**9), st.integers(1, 50), st.sampled_from([1, PAGE]))
def test_it_never_redistributes_past_the_outer_total(outer, per_pass, passes, unit):
    new_per_pass, kept = redistribute(outer * unit, per_pass * unit, passes, unit=unit)
    if kept:
        assert new_per_pass <= kept == outer * unit
        assert new_per_pass % unit == 0
    else:
        assert new_per_pass == per_pass * unit


@given(st.builds(Allotment, st.integers(0, 10**4), st.integers(0, 10**6), st.integers(0, 10**9)), st.integers(10, 99))
def test_it_splits_exactly_unless_a_floor_applies(ceiling, percent):
    split = split_pass(ceiling, percent, has_takeover=True)
    if not split.floored:
        assert split.task + split.takeover == ceiling
    assert split.task + split.raw_takeover == ceiling


@given(st.builds(Allotment, st.integers(0, 10**4), st.integers(0, 10**6), st.integers(0, 10**9)), st.integers(10, 99))
def test_it_only_ever_raises_with_floors(ceiling, percent):
    split = split_pass(ceiling, percent, has_takeover=True)
    raw, floored = split.raw_takeover, split.takeover
    assert floored.steps >= raw.steps and floored.seconds >= raw.seconds and floored.tokens >= raw.tokens
    if split.floored:
        assert (floored.steps, floored.seconds, floored.tokens) >= (0, 0, 0)
        assert floored.steps >= FLOOR_STEPS and floored.seconds >= FLOOR_SECONDS and floored.tokens >= FLOOR_TOKENS


@given(do_specs(), while_specs(), st.data())
def test_it_bounds_every_spend_the_plan_allows(do, loop, data):
    """Spend as the engine may: each leg up to min(its allotment, what the job has left)."""
    plan = resolve(do, loop)
    left = plan.outer_tokens or None
    spent = 0
    for _ in range(plan.passes):
        legs = [plan.split.task.tokens]
        if plan.split.takeover:
            legs.append(plan.split.takeover.tokens)
        if plan.judge_tokens:
            legs.append(plan.judge_tokens)
        for allotment in legs:
            cap = allotment if left is None else min(allotment, left)
            used = data.draw(st.integers(0, cap))
            spent += used
            left = None if left is None else left - used
    assert spent <= plan.worst_tokens
    if plan.outer_tokens:
        assert plan.worst_tokens <= plan.outer_tokens


@given(do_specs(), while_specs())
def test_it_keeps_per_pass_values_within_outer_totals(do, loop):
    plan = resolve(do, loop)
    if plan.outer_tokens:
        assert plan.per_pass.tokens <= plan.outer_tokens
    if plan.outer_seconds:
        assert plan.per_pass.seconds <= plan.outer_seconds
    assert plan.per_pass.steps == do.max_iterations  # steps are never redistributed
