"""The until lint (docs/recipes.md): a goal the judge cannot check from the result alone is a warning
at the line of its `until:` value, never an error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalogue.recipe import parse_recipe
from catalogue.recipe.goals import SUGGESTION, goal_warning, observables, vague_words

TASK = ".rysh/automations/tasks/digest.md"


def recipe(until: str, *, block: bool = False) -> str:
    """A recipe whose until: value sits on file line 6."""
    value = f">\n        {until}" if block else until
    return f"---\ndescription: A digest\nloop:\n  while:\n    prompts:\n      until: {value}\n---\nDo it.\n"


def until_warnings(text: str) -> list[str]:
    return [w for w in parse_recipe(text, path=TASK).warnings if "prompts.until" in w]


VAGUE = [
    pytest.param("The results are good.", ["good"], True, id="good"),
    pytest.param("Enough sources have been found.", ["enough"], True, id="enough"),
    pytest.param("The article is formatted properly.", ["properly"], True, id="properly"),
    pytest.param("The summary is high quality and has 5 bullet points.", ["high quality"], False, id="high-quality"),
    pytest.param(
        "Add sources as needed until the list at /notes is nice.", ["as needed", "nice"], False, id="as-needed"
    ),
    pytest.param("The research is complete.", ["complete"], True, id="complete-alone"),
    pytest.param("The work is done well.", ["done", "well"], True, id="done-well"),
    pytest.param(
        "A reasonable and sufficient answer for {{topic}}.", ["reasonable", "sufficient"], True, id="reasonable"
    ),
    pytest.param("The report exists.", [], True, id="nothing-observable"),
    pytest.param("notes saved", [], True, id="two-words"),
    pytest.param("list.md has 10 GOOD links", ["good"], False, id="shouted-vague"),
]


@pytest.mark.parametrize("goal, words, blind", VAGUE)
def test_it_warns_about_a_goal_the_judge_must_guess_at_its_line(goal, words, blind):
    [warning] = until_warnings(recipe(goal))
    assert warning.startswith("digest.md:6 loop.while.prompts.until: the goal ")
    assert warning.endswith(SUGGESTION)
    assert ("names nothing the judge can count or see" in warning) == blind
    for word in words:
        assert f'"{word}"' in warning
    assert vague_words(goal) == words


CRISP = [
    "The list has five entries.",
    "results.md has a table with 10 rows",
    "the page at /admin shows 'Published'",
    "list.md names at least 3 sources with URLs",
    "The saved result on {{topic}} is complete and not labelled PARTIAL.",
    "status.md says PUBLISHED: the story is live, not a draft.",
    "The saved shortlist has at least 12 strong candidates, each with a handle and a contact.",
    "The results file contains a PUBLISHED story URL for {{args}}.",
    'The page says "Thank you" as well.',
    "summary.md exists",
]


@pytest.mark.parametrize("goal", CRISP)
def test_a_crisp_goal_passes_without_a_warning(goal):
    assert goal_warning(goal) is None
    assert until_warnings(recipe(goal, block=True)) == []


def test_a_folded_goal_is_placed_on_the_line_of_its_until_key():
    [warning] = until_warnings(recipe("The results are good.", block=True))
    assert warning.startswith("digest.md:6 loop.while.prompts.until: ")


def test_the_exact_warning():
    assert until_warnings(recipe("Enough sources are found.")) == [
        "digest.md:6 loop.while.prompts.until: the goal names nothing the judge can count or see in the result "
        'and leans on words the judge must guess: "enough"; name what it can count or see instead '
        '(a number of items, a label, a URL, a file), e.g. until: "results.md lists at least 10 items, '
        'each with a URL and a one-line summary"'
    ]


def test_a_placeholder_is_not_an_observable_thing():
    assert observables("The page for {{url}} is up.") == []
    assert observables("list.md names 3 URLs") == ["a count", "a URL", "a file"]


def test_a_missing_goal_keeps_only_the_plans_warning():
    text = "---\nloop:\n  while:\n    max_iterations: 3\n---\nDo it.\n"
    assert parse_recipe(text, path=TASK).warnings == ()
    assert goal_warning("") is None and goal_warning("   \n") is None


def test_a_disabled_loop_still_lints_its_goal():
    text = "---\nloop:\n  while:\n    enabled: false\n    prompts:\n      until: Good.\n---\nDo it.\n"
    assert len(until_warnings(text)) == 1


@given(st.text())
def test_the_lint_never_raises_and_is_deterministic(goal):
    first = goal_warning(goal)
    assert first == goal_warning(goal)
    assert first is None or first.endswith(SUGGESTION)


@given(st.text(alphabet=st.sampled_from(list("ab1 .'\"/{}_-:GOODgood\n\tenough")), max_size=80))
def test_the_lint_never_raises_on_goal_like_text(goal):
    assert goal_warning(goal) == goal_warning(goal)
    assert vague_words(goal) == vague_words(goal)


@pytest.mark.parametrize("piece", ["a-", "{{", "a.", "'a", "/a", "good "])
def test_a_hostile_goal_is_read_in_linear_time(piece):
    # a goal as long as the recipe cap allows; a backtracking pattern took minutes on these
    warning = goal_warning(piece * 60_000)
    assert warning is None or warning.endswith(SUGGESTION)
