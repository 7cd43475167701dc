"""A sub-agent's budget carved out of its caller's purse (budgets.carve): whatever an agent
delegates, it and its sub-agents together never spend more than its purse held."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgets.carve import MIN_SUB_BUDGET, CarveRefused, Purse, answer_margin


def test_asking_more_than_is_left_is_refused_with_the_numbers():
    purse = Purse(80_000)
    with pytest.raises(CarveRefused) as refused:
        purse.carve(200_000, margin=10_000, holder="sub-1")
    assert str(refused.value) == (
        "sub_agent asked 200,000 tokens; this leg has 70,000 left (80,000 less 10,000 kept for your next answer)"
    )
    assert purse.left == 80_000  # nothing taken


def test_it_is_held_before_the_sub_agent_starts_and_what_it_leaves_comes_back():
    purse = Purse(80_000)
    child = purse.carve(30_000, margin=10_000, holder="sub-1")
    assert (purse.left, child.left, child.holder) == (50_000, 30_000, "sub-1")
    child.spend(12_000)
    purse.give_back(child)
    assert (purse.left, child.left) == (68_000, 0)


def test_without_a_budget_it_gets_half_of_the_room_and_too_little_is_refused():
    assert Purse(50_000).carve(None, margin=10_000, holder="sub-1").left == 20_000
    with pytest.raises(CarveRefused, match=f"needs at least {MIN_SUB_BUDGET:,}"):
        Purse(12_000).carve(None, margin=10_000, holder="sub-1")


def test_the_margin_is_the_caller_s_next_call():
    assert answer_margin(context=5_000, output=700, answers=0) == 5_000 + 700 + 256
    assert answer_margin(context=5_000, output=700, answers=2) > answer_margin(context=5_000, output=700, answers=1)


def test_a_spend_past_the_purse_is_a_bug_that_says_so():
    with pytest.raises(AssertionError, match="sub-1 spent 2,000 tokens with 1,000 left"):
        Purse(1_000, "sub-1").spend(2_000)


# a delegation script: each agent alternates calls (spending up to what it has) and sub_agent
# calls (asking any budget), nested to depth 2
actions = st.recursive(
    st.tuples(st.just("call"), st.integers(0, 50_000)),
    lambda inner: st.tuples(st.just("delegate"), st.integers(1, 300_000), st.lists(inner, max_size=6)),
    max_leaves=30,
)


def play(purse: Purse, script: list, depth: int) -> int:
    """Runs a script as the engine would: every call clamped to the purse, every delegation
    carved first (refused when it does not fit), every child played, its rest given back.
    Returns what this agent and its sub-agents spent."""
    spent = 0
    for action in script:
        if action[0] == "call":
            tokens = min(action[1], purse.left)  # the hard ceiling clamps the call
            purse.spend(tokens)
            spent += tokens
        elif depth < 2:
            try:
                child = purse.carve(action[1], margin=1_000, holder="sub")
            except CarveRefused:
                continue
            before = child.left
            used = play(child, action[2], depth + 1)
            assert used <= before  # a sub-agent and its own never pass what it was carved
            purse.give_back(child)
            spent += used
    return spent


@given(allotment=st.integers(0, 400_000), script=st.lists(actions, max_size=10))
def test_parent_and_children_never_exceed_the_leg_s_allotment(allotment, script):
    purse = Purse(allotment)
    spent = play(purse, script, 0)
    assert spent <= allotment
    assert purse.left == allotment - spent  # nothing lost, nothing made up
