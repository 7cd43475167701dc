"""Grants (docs/spend.md), pure: what a grant adds to a plan, and the bound all grants stay under."""

from hypothesis import given
from hypothesis import strategies as st

from budgets.plan import Grant, grant_refusal, is_grantable, resolve
from budgets.units import BOOK
from catalogue.spec import DoSpec, WhileSpec

GOAL = "The list has five entries."
BASE = resolve(
    DoSpec(max_duration=10 * 60, budget_size=2 * BOOK),
    WhileSpec(max_iterations=3, max_duration=60 * 60, budget=6 * BOOK, until=GOAL),
)
CAUSES = ["budget exhausted", "unfulfilled: the 3-pass cap is reached", "the loop's time cap elapsed"]
grants = st.builds(
    Grant, st.integers(0, 8), st.integers(0, 20 * BOOK).map(lambda t: t // 1000 * 1000), st.integers(0, 4 * 3600)
)


def test_a_grant_raises_exactly_the_outer_ceilings_it_names():
    plan = BASE.granted(Grant(passes=2, tokens=BOOK, seconds=600))
    assert (plan.passes, plan.outer_tokens, plan.outer_seconds) == (5, 7 * BOOK, 70 * 60)
    assert plan.per_pass == BASE.per_pass and plan.split == BASE.split  # a pass is armed as before
    assert BASE.granted(Grant()) is BASE


def test_only_ends_at_an_outer_ceiling_are_grantable():
    assert all(is_grantable(cause) for cause in CAUSES)
    for cause in ("fulfilled", "done", "stopped by user", "judge error: overloaded", "unfulfilled: the judge said no"):
        assert not is_grantable(cause)


@given(st.lists(grants, max_size=6), st.sampled_from(CAUSES), st.sampled_from([0.5, 1.0, 2.0]))
def test_grants_that_are_given_never_add_past_the_maximum(asked, cause, factor):
    given_so_far = Grant()
    for extra in asked:
        plan = BASE.granted(given_so_far)
        if grant_refusal(plan, BASE, cause, given_so_far, extra, factor) is None:
            given_so_far += extra
    assert given_so_far.passes <= BASE.passes * factor
    assert given_so_far.tokens <= BASE.outer_tokens * factor
    assert given_so_far.seconds <= BASE.outer_seconds * factor
    final = BASE.granted(given_so_far)
    assert final.worst_tokens <= BASE.outer_tokens + given_so_far.tokens  # the new hard ceiling


@given(grants)
def test_a_grant_must_give_what_the_run_ran_out_of(extra):
    plan = BASE
    for cause, needed in zip(CAUSES, ("tokens", "passes", "seconds")):
        refusal = grant_refusal(plan, BASE, cause, Grant(), extra, 2.0)
        if getattr(extra, needed) == 0:
            assert refusal is not None


@given(grants, st.sampled_from(["passes", "tokens", "seconds"]), st.integers(1, 10**9), st.sampled_from(CAUSES))
def test_a_grant_that_takes_anything_away_is_refused(extra, field, minus, cause):
    taking = Grant(**{**vars(extra), field: -minus})
    refusal = grant_refusal(BASE, BASE, cause, Grant(), taking, 2.0)
    assert refusal == "a grant only adds: passes, tokens and time must not be negative"
