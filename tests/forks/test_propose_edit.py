"""runs/forks/proposal.py: "Propose this edit" on a fork (docs/forks.md, "From a good fork to a
change"): the recipe file with the fork's edits written in, the rest byte for byte, opened as a
change request."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from catalogue.models import Recipe
from catalogue.recipe.reader import split_frontmatter
from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from reviews.services import text_diff
from runs.forks.proposal import EditRefused, recipe_with_edits, scalar
from tests.forks.rows_f import pass_row, run_row
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401

FILE = """---
description: A task   # kept as written
loop:
  do:
    budget:
      size: 4b
  while:
    max_iterations: 5
    budget: 20b
    prompts:
      until: |
        The report exists.
      iterate_with: Try again.
notify: []
---
Write the report.

Keep it short.
"""

texts = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufeff"), max_size=40)


def front(text: str) -> dict:
    return yaml.safe_load(split_frontmatter(text, "t").yaml)


@given(texts)
def test_a_scalar_reads_back_as_its_value(value):
    assert yaml.safe_load(f"k: {scalar(value)}")["k"] == value


@given(
    prompt=st.one_of(st.none(), texts), until=st.one_of(st.none(), texts), budget=st.sampled_from([None, "2b", "30p"])
)
def test_edits_land_where_they_belong_and_nothing_else_moves(prompt, until, budget):
    edits = {"prompt": prompt, "until": until, "budget": budget}
    out = recipe_with_edits(FILE, edits)
    loaded = front(out)
    assert loaded["loop"]["while"]["prompts"]["until"] == (until if until is not None else "The report exists.\n")
    assert str(loaded["loop"]["while"]["budget"]) == (budget or "20b")
    assert loaded["loop"]["while"]["prompts"]["iterate_with"] == "Try again."
    assert split_frontmatter(out, "t").body == (
        prompt if prompt is not None else "Write the report.\n\nKeep it short.\n"
    )
    changed = {line for line in out.splitlines()} ^ {line for line in FILE.splitlines()}
    for line in changed:  # only the edited keys' lines and the body differ
        assert (
            line.strip().startswith(("until:", "budget:", "The report exists."))
            or line in (prompt or "") + ("Write the report.\n\nKeep it short.\n")
            or line.strip() == ""
        )


def test_only_the_prompt_changes_only_the_body():
    out = recipe_with_edits(FILE, {"prompt": "Write the report in French.\n"})
    head = FILE[: FILE.index("---\nWrite")]
    assert out == head + "---\nWrite the report in French.\n"


def test_a_missing_key_is_added_under_its_parents():
    text = "---\nloop:\n  do:\n    budget:\n      size: 4b\ndescription: x\n---\nWork.\n"
    out = recipe_with_edits(text, {"until": "Done: the file exists", "budget": "8b"})
    assert out.startswith("---\nloop:\n  do:\n    budget:\n      size: 4b\n")
    assert out.endswith("description: x\n---\nWork.\n")
    loaded = front(out)
    assert loaded["loop"]["while"] == {"prompts": {"until": "Done: the file exists"}, "budget": "8b"}
    assert loaded["loop"]["do"] == {"budget": {"size": "4b"}} and loaded["description"] == "x"


def test_a_budget_written_as_a_mapping_keeps_its_shape():
    text = "---\nloop:\n  while:\n    budget:\n      size: 20b\n---\nWork.\n"
    assert (
        recipe_with_edits(text, {"budget": "9b"}) == "---\nloop:\n  while:\n    budget:\n      size: 9b\n---\nWork.\n"
    )


def test_a_file_without_front_matter_gets_one_only_when_a_key_is_edited():
    assert recipe_with_edits("Work.\n", {"prompt": "Play.\n"}) == "Play.\n"
    out = recipe_with_edits("Work.\n", {"until": "Done."})
    assert out == "---\nloop:\n  while:\n    prompts:\n      until: Done.\n---\nWork.\n"


def test_an_inline_mapping_is_refused_with_its_line():
    text = "---\nloop:\n  while: {max_iterations: 3}\n---\nWork.\n"
    with pytest.raises(EditRefused, match=r"line 3: loop.while is written inline"):
        recipe_with_edits(text, {"until": "Done."})


# -- the change request ---------------------------------------------------------------------------


@pytest.fixture
def editor(work):
    recipes_sync()
    return login(Client(), make_user("grace"))


def fork_of_report(**edits):
    recipe = Recipe.objects.get(kind="task", name="report")
    parent = run_row(name="report", text=recipe.latest.text, recipe=recipe, recipe_version=recipe.latest)
    pass_row(parent, 1)
    fork = run_row(
        name="report",
        text=recipe.latest.text,
        recipe=recipe,
        recipe_version=recipe.latest,
        parent=parent,
        fork_pass=1,
        fork_edits=edits,
    )
    return parent, fork


@pytest.mark.django_db
def test_it_opens_a_change_whose_diff_is_the_prompt_edit(editor):
    _, fork = fork_of_report(prompt="Write the report.\nCite every source.\n")
    response = editor.post(f"/runs/{fork.pk}/propose/")
    change = ChangeRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/changes/{change.pk}/"
    assert change.base_text == recipe_text()
    rows = [(d.kind, d.text) for d in text_diff(change.base_text, change.proposed_text) if d.kind in ("add", "del")]
    assert rows == [("add", "Cite every source.")]
    page = editor.get(f"/changes/{change.pk}/").content.decode()
    assert "Cite every source." in page and f"run #{fork.pk}" in page


@pytest.mark.django_db
def test_a_fork_without_edits_has_nothing_to_propose(editor):
    _, fork = fork_of_report(model="claude-opus-4-1")
    page = editor.post(f"/runs/{fork.pk}/propose/", follow=True).content.decode()
    assert "nothing to propose" in page
    assert not ChangeRequest.objects.exists()


@pytest.mark.django_db
def test_a_runner_who_cannot_edit_cannot_propose(work):
    recipes_sync()
    runner = login(Client(), make_user("rita", role="viewer"))
    _, fork = fork_of_report(prompt="Other.\n")
    assert runner.post(f"/runs/{fork.pk}/propose/").status_code == 403
    assert runner.get(f"/runs/{fork.pk}/propose/").status_code == 405
    assert not ChangeRequest.objects.exists()


@pytest.mark.django_db
def test_a_fork_of_a_fork_proposes_what_it_ran_with(editor):
    parent, fork = fork_of_report(prompt="Write the report.\nCite every source.\n")
    grandchild = run_row(
        name="report",
        text=fork.recipe_text,
        recipe=fork.recipe,
        recipe_version=fork.recipe_version,
        parent=fork,
        fork_pass=1,
        fork_edits={"until": "Every source is cited."},
    )
    editor.post(f"/runs/{grandchild.pk}/propose/")
    change = ChangeRequest.objects.get()
    rows = [(d.kind, d.text) for d in text_diff(change.base_text, change.proposed_text) if d.kind in ("add", "del")]
    assert rows == [
        ("del", "      until: The report exists."),
        ("add", "      until: Every source is cited."),
        ("add", "Cite every source."),
    ]
