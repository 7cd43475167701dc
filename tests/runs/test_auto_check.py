"""`python manage.py auto <kind> check NAME_OR_PATH [ARGS...]`."""

import os
import subprocess
import sys
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from budgets.units import BOOK
from spend.prices import forget_prices
from spend.services import quota_set

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "recipes"
PUBLISHING = DEMO / ".rysh/automations/webs/halilagin-medium.md"

pytestmark = pytest.mark.django_db  # prices and quotas in force are read from the database


@pytest.fixture(autouse=True)
def demo_repo(settings):
    settings.RYSH_RECIPES_REPO = str(DEMO)


@pytest.fixture(autouse=True)
def fresh_prices():
    """A price set here is cached past the test's rolled-back transaction: forget it."""
    forget_prices()
    yield
    forget_prices()


def check(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def test_it_prints_the_publishing_plan_byte_for_byte():
    out = check("web", "check", str(PUBLISHING))
    assert out.startswith(
        "loop enabled=true  maxIter=5\n"
        "perPass: tokens=800000  duration=15m0s  takeover=90\n"
        "outer:   tokensTotal=4000000  duration=0s\n"
    )


def test_it_shows_the_split_floors_worst_case_and_warnings():
    out = check("web", "check", "halilagin-medium", "./drafts/loop.md")
    assert "  task     135 steps  13m30s  720000 tokens (3.6b)" in out
    assert ("  wrap-up  15 steps  1m30s  80000 tokens (80p)  -> floored to 100 steps  5m0s  200000 tokens (1b)") in out
    assert "  pass worst case  235 steps  18m30s  920000 tokens (4.6b)" in out
    assert "worst case: 4000000 tokens (1s) over 5 passes, at most $40.00 on claude-sonnet-5-5" in out
    assert "duration DISABLED: loop.while.max_duration 15m does not exceed one pass (15m)" in out
    assert out.rstrip().endswith("ok: web/halilagin-medium is valid")


@pytest.mark.parametrize(
    "kind, name",
    [
        ("web", "halilagin-medium"),
        ("web", "scout"),
        ("task", "reading-list"),
    ],
)
def test_it_checks_every_demo_recipe(kind, name):
    assert f"ok: {kind}/{name} is valid" in check(kind, "check", name)


def test_it_resolves_the_scout_recipe_by_rysh_algebra():
    out = check("web", "check", "scout", "my show")
    assert out.startswith(
        "loop enabled=true  maxIter=5\n"
        "perPass: tokens=600000  duration=8m0s  takeover=90\n"
        "outer:   tokensTotal=3000000  duration=40m0s\n"
    )


def test_it_says_a_loop_without_a_goal_cannot_run(tmp_path):
    recipe = tmp_path / "once.md"
    recipe.write_text("---\nloop:\n  while:\n    max_iterations: 3\n---\nDo the thing.\n")
    out = check("task", "check", str(recipe))
    assert out.startswith("loop enabled=false  maxIter=1\n")
    assert "loop cannot run (no exit condition)" in out


def test_it_warns_about_placeholders_nothing_fills(tmp_path):
    recipe = tmp_path / "holes.md"
    recipe.write_text("---\nargs: [city]\n---\nVisit {{city}} and {{country}}.\n")
    out = check("task", "check", str(recipe))
    assert "{{country}}" in out and "warnings:" in out


def test_it_warns_about_a_goal_the_judge_must_guess(tmp_path):
    recipe = tmp_path / "vague.md"
    recipe.write_text("---\nloop:\n  while:\n    prompts:\n      until: The summary is good enough.\n---\nSum up.\n")
    out = check("task", "check", str(recipe))
    assert "warnings:\n  - vague.md:5 loop.while.prompts.until: the goal names nothing the judge can count" in out
    assert 'words the judge must guess: "good enough"' in out
    assert out.rstrip().endswith("ok: task/vague is valid")  # a warning, never an error


def test_a_crisp_goal_passes_without_a_warning(tmp_path):
    recipe = tmp_path / "crisp.md"
    recipe.write_text(
        "---\nloop:\n  while:\n    prompts:\n      until: list.md names at least 3 sources with URLs\n---\nGo.\n"
    )
    assert "prompts.until" not in check("task", "check", str(recipe))


def test_it_refuses_an_unknown_name():
    with pytest.raises(CommandError, match="no task recipe named 'nope'"):
        check("task", "check", "nope")


def run_manage(*args, tmp_path):
    env = {**os.environ, "RYSH_DATA_DIR": str(tmp_path), "RYSH_RECIPES_REPO": str(DEMO)}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_it_exits_0_when_valid(tmp_path):
    result = run_manage("auto", "web", "check", "halilagin-medium", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "loop enabled=true  maxIter=5",
        "perPass: tokens=800000  duration=15m0s  takeover=90",
        "outer:   tokensTotal=4000000  duration=0s",
    ]


def test_it_exits_1_with_every_error_on_stderr(tmp_path):
    recipe = tmp_path / "broken.md"
    recipe.write_text(
        "---\n"
        "loop:\n"
        "  do:\n"
        "    budget:\n"
        "      size: 0b\n"
        "      watch:\n"
        "        takeover_when: 5\n"
        "  whilst: {}\n"
        "---\n"
        "Prompt.\n"
    )
    result = run_manage("auto", "task", "check", str(recipe), tmp_path=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "broken.md:5 loop.do.budget.size:" in result.stderr
    assert (
        "broken.md:7 loop.do.budget.watch.takeover_when: expected a whole number from 10 to 99, got 5"
    ) in result.stderr
    assert "broken.md:8 loop.whilst: unknown key 'whilst' (did you mean 'while'?)" in result.stderr


def test_it_shows_the_worst_case_against_the_installation_and_recipe_quotas():
    quota_set(scope="installation", window="day", tokens=2 * BOOK, dollars=None)
    quota_set(scope="recipe", target="web/halilagin-medium", window="month", tokens=100 * BOOK, dollars=Decimal(500))
    quota_set(scope="recipe", target="web/scout", window="month", tokens=BOOK, dollars=None)  # another recipe's
    quota_set(scope="user", user=User.objects.create(username="alice"), window="day", tokens=BOOK, dollars=None)
    out = check("web", "check", "halilagin-medium", "./drafts/loop.md")
    quota = [line for line in out.splitlines() if line.startswith("quota: ")]
    assert quota == [
        "quota: worst case 1s tokens ($40.00); today's installation quota has 2b tokens left — the run may pause",
        "quota: worst case 1s tokens ($40.00); this month's quota of recipe web/halilagin-medium has 5s tokens "
        "and $500.00 left — fits",
    ]  # the CLI has no user: no user quota
    assert out.index("worst case: 4000000 tokens") < out.index("quota: ") < out.index("warnings:")


def test_it_warns_when_the_recipes_model_has_no_price(tmp_path, django_capture_on_commit_callbacks):
    recipe = tmp_path / "new-model.md"
    recipe.write_text("---\nmodel: claude-fable-5-2\n---\nDo the thing.\n")
    out = check("task", "check", str(recipe))
    assert "at most n/a on claude-fable-5-2" in out
    assert (
        "  - model claude-fable-5-2 has no price: money shows as n/a and a dollar quota pauses its runs; "
        "set one with `auto price set` or on the Prices page"
    ) in out
    with django_capture_on_commit_callbacks(execute=True):
        check("price", "set", "claude-fable-5-2", *"--input 5 --output 25 --cache-read 0.5 --cache-write 6.25".split())
    out = check("task", "check", str(recipe))
    assert "has no price" not in out and "at most $15.00 on claude-fable-5-2" in out  # priced by the admin's row
    assert "billed on top at $0.50/M tokens" in out


def test_it_says_which_generation_a_pinned_model_is_and_whether_it_is_legacy(tmp_path):
    recipe = tmp_path / "old-model.md"
    recipe.write_text("---\nmodel: claude-sonnet-4-6\njudge_model: claude-haiku-5-5\n---\nDo the thing.\n")
    out = check("task", "check", str(recipe))
    assert (
        "model: claude-sonnet-4-6 is of the legacy 4.x generation; the current Sonnet is claude-sonnet-5-5\n"
        "model: claude-haiku-5-5 is the current Haiku (5.x generation)\n"
    ) in out
    unpinned = tmp_path / "defaults.md"
    unpinned.write_text("Do the thing.\n")
    assert "model: " not in check("task", "check", str(unpinned))  # the defaults follow the lineup
