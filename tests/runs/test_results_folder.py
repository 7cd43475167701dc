"""A custom results folder (outside webs/ and tasks/) belongs to the first recipe that claimed it:
a later recipe naming the same folder, one inside it or one holding it cannot run."""

import pytest

from catalogue.models import Recipe, RecipeVersion
from catalogue.selectors import results_folder_owner
from catalogue.sync import parse_version
from runs.services import DryRun, RunRefused, run_start

pytestmark = pytest.mark.django_db

TEXT = """---
output_dir: {output_dir}
loop:
  do:
    budget:
      size: 10p
---
Save notes into {{{{output_dir}}}}.
"""


def catalogue_recipe(kind: str, name: str, output_dir: str) -> Recipe:
    folder = {"web": "webs", "task": "tasks"}[kind]
    path = f"{folder}/{name}.md"
    text = TEXT.format(output_dir=output_dir)
    if kind == "web":
        text = text.replace("---\n", "---\nurl: https://example.com/\n", 1)
    recipe = Recipe.objects.create(kind=kind, name=name, path=path)
    version = RecipeVersion.objects.create(
        recipe=recipe, commit_sha="a" * 40, path=path, text=text, **parse_version(text, path=path, kind=kind, name=name)
    )
    assert version.valid, version.errors
    recipe.latest = recipe.good = version
    recipe.save()
    return recipe


def test_the_first_claim_keeps_the_folder_and_a_later_one_is_refused():
    catalogue_recipe("task", "first", "shared/out")
    catalogue_recipe("task", "second", "shared/out")
    assert isinstance(run_start(kind="task", name_or_path="first", args=[], dry_run=True), DryRun)
    with pytest.raises(RunRefused) as refused:
        run_start(kind="task", name_or_path="second", args=[], dry_run=True)
    message = str(refused.value)
    assert "task/second: output_dir 'shared/out' is the results folder of task/first" in message
    assert "tasks/second/" in message


@pytest.mark.parametrize(
    ("theirs", "mine", "refused"),
    [
        ("shared", "shared/deeper", True),  # inside theirs
        ("shared/deeper", "Shared", True),  # holding theirs, whatever the case
        ("./shared//x/", "shared/x", True),  # the same folder, spelled differently
        ("shared/a", "shared/b", False),  # siblings are distinct folders
        ("webs/first/results", "first", False),  # a folder under webs/ is no claim on the root
    ],
)
def test_overlapping_folders_are_refused_and_distinct_ones_run(theirs, mine, refused):
    catalogue_recipe("web", "first", theirs)
    catalogue_recipe("task", "second", mine)
    owner = results_folder_owner(kind="task", name="second", output_dir=mine)
    assert (owner is not None) == refused
    if refused:
        assert owner.target == "web/first"


def test_an_archived_recipe_no_longer_holds_its_folder():
    first = catalogue_recipe("task", "first", "shared")
    catalogue_recipe("task", "second", "shared")
    first.archived = True
    first.save()
    assert isinstance(run_start(kind="task", name_or_path="second", args=[], dry_run=True), DryRun)


def test_a_recipe_file_outside_the_catalogue_cannot_take_a_catalogued_folder(tmp_path):
    catalogue_recipe("task", "first", "shared")
    path = tmp_path / "stray.md"
    path.write_text(TEXT.format(output_dir="shared/sub"))
    with pytest.raises(RunRefused, match="is the results folder of task/first"):
        run_start(kind="task", name_or_path=str(path), args=[], dry_run=True)
