"""`auto check` against the version that runs now: a recipe whose model changes generation across
the tokenizer change is told the same work counts about 30% more tokens (or fewer)."""

from io import StringIO

import pytest
from django.core.management import call_command

from catalogue.models import Recipe
from catalogue.sync import recipes_sync
from tests.recipes_git import recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db


def check(path) -> str:
    out = StringIO()
    call_command("auto", "task", "check", str(path), stdout=out)
    return out.getvalue()


def test_pinning_a_model_of_the_older_generation_says_the_count_goes_down(work, tmp_path):
    recipes_sync()  # tasks/report runs on the default, claude-sonnet-5-5
    pinned = tmp_path / "report.md"
    pinned.write_text(recipe_text().replace("---\ndescription", "---\nmodel: claude-sonnet-4-6\ndescription", 1))
    out = check(pinned)
    assert "model: the model changes generation, claude-sonnet-5-5 (5.x) to claude-sonnet-4-6 (4.x)" in out
    assert "model: claude-sonnet-4-6 is of the legacy 4.x generation" in out
    assert "changes generation" not in check(work.path / ".rysh/automations/tasks/report.md")  # the same models


def test_a_version_priced_on_the_old_default_says_the_same_work_now_counts_more(work):
    recipes_sync()
    good = Recipe.objects.get(kind="task", name="report").good
    good.plan = {**good.plan, "executor": "claude-sonnet-4-6", "judge": "claude-haiku-4-5"}  # synced before 5.x
    good.save()
    out = check(work.path / ".rysh/automations/tasks/report.md")
    assert (
        "model: the model changes generation, claude-sonnet-4-6 (4.x) to claude-sonnet-5-5 (5.x): its tokenizer "
        "counts about 30% more tokens for the same text, so the same work now counts about 30% more tokens"
    ) in out
    assert "claude-haiku-4-5 (4.x) to claude-haiku-5-5 (5.x)" in out
