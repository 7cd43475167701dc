"""`effort:` (docs/recipes.md): low, medium or high, only for models that take it (budgets.efforts)."""

import pytest

from budgets.efforts import takes_effort
from catalogue.checks import extra_issues
from catalogue.recipe import RecipeError, parse_recipe

TASK = ".rysh/automations/tasks/think.md"


def errors(text: str) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=TASK)
    return [str(issue) for issue in caught.value.issues]


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_it_reads_effort_for_a_model_that_takes_it(effort):
    spec = parse_recipe(f"---\nmodel: claude-opus-4-7\neffort: {effort}\n---\nThink.\n", path=TASK)
    assert (spec.effort, spec.effort_line) == (effort, 3)


def test_a_recipe_without_effort_is_as_before():
    assert parse_recipe("Think.", path=TASK).effort is None


@pytest.mark.parametrize("given", ["max", "HIGH", "3", "[low]", '""'])
def test_it_refuses_anything_else_at_its_line(given):
    found = errors(f"---\nmodel: claude-opus-4-7\neffort: {given}\n---\nThink.\n")
    assert len(found) == 1 and found[0].startswith("think.md:3 effort: expected low or medium or high")


@pytest.mark.parametrize(
    "pin",
    [
        "model: claude-sonnet-4-6",
        "loop:\n  do:\n    model: claude-haiku-4-5-20251001",
        "model: claude-3-5-sonnet-latest",
    ],
)
def test_it_refuses_effort_at_its_line_for_a_pinned_model_that_takes_none(pin):
    found = errors(f"---\n{pin}\neffort: high\n---\nThink.\n")
    line = 2 + pin.count("\n") + 1
    assert len(found) == 1
    assert found[0].startswith(f"think.md:{line} effort:") and "does not take an effort setting" in found[0]


def test_the_step_model_decides_over_the_top_level_one():
    spec = parse_recipe(
        "---\nmodel: claude-sonnet-4-6\neffort: low\nloop:\n  do:\n    model: claude-sonnet-5\n---\nx\n", path=TASK
    )
    assert spec.effort == "low"


@pytest.mark.parametrize(
    ("model", "takes"),
    [
        ("claude-opus-4-7", True),
        ("claude-opus-4-7-20260101", True),
        ("claude-sonnet-5", True),
        ("claude-opus-5-1", True),
        ("claude-sonnet-4-6", False),
        ("claude-haiku-4-5-20251001", False),
        ("claude-opus-4-20250514", False),
        ("claude-3-7-sonnet-latest", False),
        ("scripted-demo", False),
        (None, False),
    ],
)
def test_it_knows_which_models_take_effort(model, takes):
    assert takes_effort(model) is takes


def test_an_unpinned_recipe_is_checked_against_the_default_model(settings):
    spec = parse_recipe("---\ndescription: x\neffort: medium\n---\nThink.\n", path=TASK)
    settings.RYSH_EXECUTOR_MODEL = "claude-sonnet-4-6"
    [issue] = extra_issues(spec)
    assert str(issue).startswith("think.md:3 effort: claude-sonnet-4-6 does not take an effort setting")
    settings.RYSH_EXECUTOR_MODEL = "claude-opus-4-7"
    assert extra_issues(spec) == []
