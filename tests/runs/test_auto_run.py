"""`auto <kind> run|status|stop|cancel|continue|resume|land|results|history` (in-process)."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from budgets.units import PAGE
from catalogue.models import Recipe, RecipeVersion
from runs.models import Run, RunEvent
from spend.services import quota_set
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

RECIPE = """---
args: [topic]
loop:
  do:
    budget:
      size: 20p
      watch:
        takeover_when: 80
        takeover_prompt: Save it as PARTIAL.
---
Write about {{topic}} into {{output_dir}}/notes.md.
"""


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def recipe(recipe_file):
    return recipe_file(RECIPE, "notes")


def test_it_prints_a_dry_run_and_changes_nothing(recipe):
    out = auto("task", "run", str(recipe), "tides", "--dry-run", "--budget", "10p")
    assert out.startswith("dry run: task/notes  (nothing is changed)")
    assert "Write about tides into " in out and "/tasks/notes/results/notes.md." in out
    assert "perPass: tokens=10000  duration=20m0s  takeover=80" in out
    assert Run.objects.count() == 0


def test_it_starts_shows_and_steers_a_run(recipe):
    out = auto("task", "run", str(recipe), "tides", "--provider", "scripted")
    assert "run #1 queued: task/notes (OFFLINE: scripted demo model, not Claude)" in out
    status = auto("task", "status")
    assert "#1" in status and "task/notes" in status and "pass 0/1" in status and "queued" in status
    with pytest.raises(CommandError, match="already has an active run: run #1"):
        auto("task", "run", str(recipe), "tides", "--provider", "scripted")
    assert "cancelled before it started; state preserved" in auto("task", "cancel", "notes")
    assert "paused(cancelled)" in auto("task", "status", "notes")
    assert "continues from its checkpoint" in auto("task", "continue", "#1")
    run = drive(
        Run.objects.get(),
        FakeModel(
            task=[{"text": "a", "tools": [tool("save_result", filename="notes.md", content="n")]}, {"text": "Done."}]
        ),
    )
    assert run.cause == "done"
    assert "notes.md" in auto("task", "results", "notes") and "run-report.md" in auto("task", "results", "notes")
    history = auto("task", "history")
    assert "notes" in history and "done [scripted]" in history
    with pytest.raises(CommandError, match="has no active run; its latest, #1, finished \\(done\\)"):
        auto("task", "stop", "notes")
    with pytest.raises(CommandError, match="nothing to continue: it finished \\(done\\). Use resume"):
        auto("task", "continue", "notes")
    assert "resuming run #1" in auto("task", "resume", "notes", "--provider", "scripted")


def test_it_stops_a_queued_run_at_once(recipe):
    auto("task", "run", str(recipe), "x", "--provider", "scripted")
    assert auto("task", "stop", "notes").strip() == "run #1 stopped"
    assert Run.objects.get().cause == "stopped by user"


def test_it_refuses_land_now_when_nothing_is_running(recipe):
    auto("task", "run", str(recipe), "x", "--provider", "scripted")
    with pytest.raises(CommandError, match="is not running \\(queued\\); nothing to land"):
        auto("task", "land", "notes")


def test_it_refuses_missing_arguments_and_unknown_recipes(recipe):
    with pytest.raises(CommandError, match="task/notes needs 1 argument\\(s\\): topic; missing: topic"):
        auto("task", "run", str(recipe), "--provider", "scripted")
    with pytest.raises(CommandError, match="no task recipe named 'nope'"):
        auto("task", "run", "nope")


def test_it_refuses_an_unknown_web_recipe_and_dry_runs_a_web_one(recipe, tmp_path, settings):
    with pytest.raises(CommandError, match="no web recipe named 'anything'"):
        auto("web", "run", "anything")
    folder = tmp_path / "repo/.rysh/automations/webs"
    folder.mkdir(parents=True)
    (folder / "shop.md").write_text(
        "---\nurl: /demo-site/\nallowed_domains: [127.0.0.1]\napprove: ['click:Buy*']\n---\nBuy nothing.\n"
    )
    settings.RYSH_SITE_URL = "http://127.0.0.1:8000"
    out = auto("web", "run", str(folder / "shop.md"), "--dry-run")
    assert (
        "browser: profile default, start page http://127.0.0.1:8000/demo-site/, reads pages as text, only 127.0.0.1"
        in out
    )
    assert "approval needed for: click:Buy*" in out


def test_it_runs_the_last_good_version_when_the_newest_is_broken(recipe_file, settings):
    recipe_file(RECIPE, "notes")  # the script beside it in the working tree
    item = Recipe.objects.create(kind="task", name="notes", path=".rysh/automations/tasks/notes.md")
    good = RecipeVersion.objects.create(recipe=item, commit_sha="a" * 40, path=item.path, text=RECIPE, valid=True)
    bad = RecipeVersion.objects.create(
        recipe=item,
        commit_sha="b" * 40,
        path=item.path,
        valid=False,
        text="---\nloop: [\n---\nx\n",
        errors=["notes.md:2 frontmatter: invalid YAML"],
    )
    Recipe.objects.filter(pk=item.pk).update(good=good, latest=bad)
    out = auto("task", "run", "notes", "tides", "--provider", "scripted")
    run = Run.objects.get()
    assert run.recipe_version == good and "run #1 queued" in out
    note = RunEvent.objects.get(run=run, kind="note").message
    assert note == ("the newest version of task/notes (bbbbbbbb) is broken; running the last good version (aaaaaaaa)")


def test_a_dry_run_shows_the_worst_case_against_each_quota(recipe):
    quota_set(scope="installation", window="day", tokens=15 * PAGE, dollars=None)
    quota_set(scope="recipe", target="task/notes", window="month", tokens=None, dollars=Decimal(10))
    out = auto("task", "run", str(recipe), "tides", "--dry-run")
    assert (
        "quota: worst case 216p tokens ($2.16); today's installation quota has 15p tokens left — the run may pause"
    ) in out
    assert (
        "quota: worst case 216p tokens ($2.16); this month's quota of recipe task/notes has $10.00 left — fits" in out
    )
    assert Run.objects.count() == 0
