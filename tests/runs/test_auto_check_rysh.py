"""`auto task check` of a recipe written in rysh's current format (tests/fixtures/rysh): every key
is accepted, and the plan lines show the floor, each leg's model and effort, and a worst case
priced with the wrap-up leg's model."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from notify import services
from spend.prices import forget_prices

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/rysh/.rysh/automations/tasks/release-notes.md"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_prices():
    forget_prices()
    yield
    forget_prices()


def check(path, *args) -> str:
    out = StringIO()
    call_command("auto", "task", "check", str(path), *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_recipe_in_ryshs_current_format_checks_ok(settings):
    settings.RYSH_RECIPES_REPO = str(FIXTURE.parents[3])
    services.channel_save(user=None, name="team-mail", kind="email", recipients="all@example.com")
    out = check(FIXTURE, "2.4")
    assert out.startswith(
        "loop enabled=true  maxIter=5\n"
        "perPass: tokens=600000  duration=8m0s  takeover=90\n"
        "outer:   tokensTotal=3000000  duration=40m0s\n"
    )
    # 300 steps / 8m / 3b at 90: the wrap-up share 30 / 48s / 60p is under the recipe's floor
    assert "  wrap-up  30 steps  48s  60000 tokens (60p)  -> floored to 80 steps  4m0s  200000 tokens (1b)" in out
    assert (
        "floor:   80 steps / 4m / 1b when the wrap-up share is under 40 steps / 1m / 60p; "
        "raised because the wrap-up share is under the trigger on steps, duration" in out
    )
    assert "models:  task claude-opus-5-5, effort high\n         wrap-up claude-haiku-5-5, effort low\n" in out
    assert "judge:   claude-sonnet-5-5, effort medium, at most" in out
    assert "on claude-opus-5-5 and claude-haiku-5-5" in out
    assert "job.md" not in out and "release-notes.md:9 notify.humanoid: is ignored" in out
    assert out.rstrip().endswith("ok: task/release-notes is valid")


def test_the_worst_case_is_priced_with_a_dearer_wrap_up_model(recipe_file):
    text = (
        "---\nloop:\n  do:\n    model: claude-haiku-5-5\n    budget:\n      size: 1b\n      watch:\n"
        "        takeover_prompt: Save.\n{watch}---\nGo.\n"
    )
    cheap = check(recipe_file(text.format(watch=""), "cheap"))
    dear = check(recipe_file(text.format(watch="        model: claude-opus-5-5\n"), "dear"))
    money = [
        line.split("at most ")[1].split(" on ")[0]
        for line in (cheap, dear)
        for line in line.splitlines()
        if line.startswith("worst case:")
    ]
    assert money[0] != money[1] and float(money[1][1:]) > float(money[0][1:])
    assert "on claude-haiku-5-5 and claude-opus-5-5" in dear


def test_without_a_floor_the_built_in_one_is_shown(recipe_file):
    text = (
        "---\nloop:\n  do:\n    max_iterations: 1000\n    max_duration: 60m\n    budget:\n      size: 10b\n"
        "      watch:\n        takeover_prompt: Save.\n---\nGo.\n"
    )
    out = check(recipe_file(text, "plain"))
    assert (
        "floor:   100 steps / 5m / 1b when the wrap-up share is under 50 steps / 1m / 60p; not needed: the share is above every trigger"
        in out
    )
    assert "models:  task claude-sonnet-5-5\n         wrap-up claude-sonnet-5-5\n" in out
