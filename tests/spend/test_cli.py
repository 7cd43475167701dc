"""`auto quota set|list|rm` and `auto price set|list|rm` (in-process), beside `auto <kind> …`."""

from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from audit.models import AuditEntry
from budgets.units import BOOK
from spend.models import ModelPrice, Quota
from spend.prices import forget_prices, price_of

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_prices():
    """A price set here is cached past the test's rolled-back transaction: forget it."""
    forget_prices()
    yield
    forget_prices()


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def test_it_sets_lists_and_removes_quotas_at_every_scope(monkeypatch):
    monkeypatch.setattr("audit.context.os_user", lambda: "ops")
    alice = User.objects.create(username="alice")
    assert auto("quota", "list").strip() == "no quotas: runs are limited only by their own budgets"
    assert auto("quota", "set", "installation", "--window", "day", "--tokens", "20b", "--dollars", "50").strip() == (
        "today's installation quota: 1s tokens and $50.00"
    )
    assert auto("quota", "set", "recipe", "webs/publish-story", "--window", "month", "--tokens", "2 b").strip() == (
        "this month's quota of recipe web/publish-story: 2b tokens"  # the folder names the same recipe
    )
    auto("quota", "set", "user", "alice", "--window", "rolling", "--dollars", "$12.50")
    assert Quota.objects.get(scope="installation").tokens == 20 * BOOK
    assert Quota.objects.get(scope="user").user == alice and Quota.objects.get(scope="user").window == "rolling 24h"

    listed = auto("quota", "list").splitlines()
    assert listed[0].split() == ["id", "quota", "window", "limit", "used", "reserved", "left", "resets", "at"]
    installation = next(line for line in listed if "the installation" in line)
    assert "calendar day" in installation and "1s + $50.00" in installation and "0p + $0.00" in installation
    assert any("recipe web/publish-story" in line and "calendar month" in line for line in listed)
    assert any("user alice" in line and "rolling 24 h" in line and "$12.50" in line for line in listed)

    user_quota = Quota.objects.get(scope="user")
    assert auto("quota", "rm", str(user_quota.pk)).strip() == "the last 24 h's quota of user alice removed"
    assert auto("quota", "rm", "recipe", "web/publish-story", "--window", "month").strip() == (
        "this month's quota of recipe web/publish-story removed"
    )
    assert list(Quota.objects.values_list("scope", flat=True)) == ["installation"]
    # the CLI has no login: the audit rows name the OS user
    rows = AuditEntry.objects.filter(action__startswith="quota.")
    assert rows.count() == 5 and set(rows.values_list("actor_name", flat=True)) == {"cli:ops"}


def test_setting_a_quota_again_changes_it():
    auto("quota", "set", "installation", "--window", "day", "--tokens", "1b")
    auto("quota", "set", "installation", "--window", "day", "--tokens", "3b")
    assert list(Quota.objects.values_list("tokens", "micros")) == [(3 * BOOK, None)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["set", "installation", "--tokens", "1b"], "--window is needed: day, month or rolling"),
        (["set", "installation", "--window", "weekly", "--tokens", "1b"], "--window 'weekly': expected day"),
        (["set", "installation", "--window", "day"], "a quota needs tokens, dollars or both"),
        (["set", "installation", "--window", "day", "--tokens", "3x"], "--tokens: expected a budget size"),
        (["set", "installation", "--window", "day", "--dollars", "lots"], "--dollars 'lots': expected an amount"),
        (["set", "installation", "--window", "day", "--dollars", "-5"], "must be more than 0"),
        (["set", "recipe", "--window", "day", "--tokens", "1b"], "a recipe quota names its recipe"),
        (["set", "recipe", "publish-story", "--window", "day", "--tokens", "1b"], "expected KIND/NAME"),
        (["set", "user", "nobody", "--window", "day", "--tokens", "1b"], "no user named 'nobody'"),
        (["set", "team", "--window", "day", "--tokens", "1b"], "scope 'team': expected installation"),
        (["rm", "99"], "no quota #99"),
        (["rm", "installation", "--window", "day"], "no installation quota over day"),
        (["run"], "auto quota run: expected auto quota set|list|rm"),
    ],
)
def test_it_refuses_a_bad_quota_with_a_clear_message(args, message):
    with pytest.raises(CommandError, match=message.replace("|", r"\|").replace("(", r"\(")):
        auto("quota", *args)
    assert not Quota.objects.exists()


def test_it_sets_lists_and_removes_prices(django_capture_on_commit_callbacks):
    listed = auto("price", "list")
    assert "claude-sonnet-4-6  $3     $15     $0.30       $3.75        $6        the built-in table" in listed
    assert "no price (money shows as n/a; a dollar quota pauses their runs): " in listed
    assert "claude-fable-5-2" in listed.split("no price")[1]
    with django_capture_on_commit_callbacks(execute=True):
        said = auto(
            "price", "set", "claude-fable-5-2", "--input", "5", "--output", "25", "--cache-read", "0.5",
            "--cache-write", "6.25", "--cache-write-1h", "10",
        )  # fmt: skip
    assert said.strip() == (
        "price of claude-fable-5-2: input $5, output $25, cache read $0.50, cache write $6.25 (1 hour $10) "
        "per million tokens"
    )
    assert price_of("claude-fable-5-2").output == Decimal(25)
    listed = auto("price", "list")
    assert "claude-fable-5-2   $5     $25     $0.50       $6.25        $10       set by an admin" in listed
    assert "claude-fable-5-2" not in listed.split("no price")[1]
    with django_capture_on_commit_callbacks(execute=True):
        said = auto("price", "rm", "claude-fable-5-2")
    assert said.strip() == "price of claude-fable-5-2 removed; the built-in table applies"
    assert not ModelPrice.objects.exists() and price_of("claude-fable-5-2") is None


def test_an_admin_price_over_a_built_in_row_says_so(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        auto("price", "set", "claude-haiku-4-5", *"--input 0.8 --output 4 --cache-read 0.08 --cache-write 1".split())
    line = next(line for line in auto("price", "list").splitlines() if line.startswith("claude-haiku-4-5 "))
    assert line.split()[1:5] == ["$0.80", "$4", "$0.08", "$1"] and line.endswith(
        "set by an admin (over the built-in row)"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["set", "claude-x", "--input", "1"], "auto price set claude-x needs --output"),
        (["set", "claude-x", *"--input 1 --output 2 --cache-read 3 --cache-write -1".split()], "cache write price"),
        (["set", "claude-x", *"--input one --output 2 --cache-read 3 --cache-write 1".split()], "--input 'one'"),
        (["rm", "claude-sonnet-4-6"], "no admin price for 'claude-sonnet-4-6'"),
        (["set"], "auto price set MODEL"),
    ],
)
def test_it_refuses_a_bad_price_with_a_clear_message(args, message):
    with pytest.raises(CommandError, match=message):
        auto("price", *args)
    assert not ModelPrice.objects.exists()


def test_the_recipe_commands_are_untouched_and_do_not_take_spend_actions():
    assert auto("task", "status").strip() == "no active task runs"
    with pytest.raises(CommandError, match=r"auto web set: set is for quotas and prices \(auto quota\|price set\)"):
        auto("web", "set")
    with pytest.raises(CommandError, match="invalid choice: 'team'"):
        auto("team", "list")
