"""A fork refused before anything is spent (docs/forks.md), each refusal naming its field: a
budget below one step, an unknown model, an empty `until`, a pass that cannot be forked (with
why), a run of another recipe, the last pass with nothing after it, a bad effort."""

from __future__ import annotations

import pytest

from runs.forks import ForkEdits, ForkRefused, fork_plan, run_fork
from runs.models import LedgerEntry, Run
from tests.conftest import drive, fresh_cache  # noqa: F401 (fixture)
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.forks.fork_fixtures import four_pass_recipe, per_pass, start_four  # noqa: F401 (fixtures)
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def parent(start_four) -> Run:
    return drive(start_four(), per_pass(judge=["NO\na", "NO\nb", "NO\nc", "NO\nd"]))


def refused(run: Run, field: str, match: str, **options) -> None:
    runs, spent = Run.objects.count(), LedgerEntry.objects.count()
    with pytest.raises(ForkRefused, match=match) as caught:
        run_fork(run=run, user=None, **{"pass_number": 2, **options})
    assert caught.value.field == field
    assert (Run.objects.count(), LedgerEntry.objects.count()) == (runs, spent)  # nothing started, nothing spent


def test_a_budget_below_one_step_is_refused_on_its_field(parent):
    refused(parent, "budget", r"budget: .* is below what one step needs", edits=ForkEdits(budget="1"))
    refused(parent, "budget", r"budget: expected", edits=ForkEdits(budget="lots"))


def test_an_empty_until_or_prompt_is_refused(parent):
    refused(parent, "until", "until: the goal the judge checks cannot be empty", edits=ForkEdits(until="  "))
    refused(parent, "prompt", "prompt: the task prompt cannot be empty", edits=ForkEdits(prompt=""))


def test_an_effort_outside_the_levels_is_refused(parent):
    refused(parent, "effort", "effort: expected one of low, medium, high", edits=ForkEdits(effort="max"))


def test_an_unknown_model_is_refused_by_the_models_api(parent, fake_anthropic, fresh_cache):
    Run.objects.filter(pk=parent.pk).update(provider="anthropic")
    parent.refresh_from_db()
    refused(
        parent,
        "model",
        "model: claude-nonesuch-9 is not a model this API key can use",
        edits=ForkEdits(model="claude-nonesuch-9"),
    )


def test_a_pass_that_does_not_exist_names_those_that_can_be_forked(parent):
    refused(parent, "pass", r"has no pass 7 to fork from \(forkable: 0, 1, 2, 3, 4\)", pass_number=7)
    refused(parent, "pass", "redo: expected a pass", pass_number=0, redo=True)


def test_the_last_pass_leaves_nothing_to_run_but_can_be_redone(parent):
    refused(parent, "pass", r"pass 4 is the last of the recipe's 4 pass\(es\).*redo it", pass_number=4)
    assert fork_plan(run=parent, pass_number=4, redo=True).from_pass == 3


def test_a_run_of_another_recipe_is_refused(parent):
    refused(parent, "run", f"run #{parent.pk} is a run of task/four, not of task/fix", target="task/fix")


def test_a_pruned_point_is_refused_with_its_cause(parent):
    from workspaces.models import WorkspacePass

    WorkspacePass.objects.filter(workspace__run=parent).update(point="")
    refused(parent, "pass", "pass 2: no restorable point was kept for it")
