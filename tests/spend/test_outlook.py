"""Before the start (docs/spend.md): a run's worst case against what each quota has left, the models
that have no price, and a scheduled recipe's runs per window against its quotas' limits."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db.models import F

from budgets.plan import resolve
from budgets.units import BOOK, PAGE
from catalogue.plan_report import worst_case_money
from catalogue.recipe import parse_recipe
from runs.outlook import (
    TICKS_CAP,
    WorstCase,
    price_warnings,
    quota_lines,
    recipe_outlook,
    schedule_lines,
    schedule_outlook,
    ticks_in,
)
from spend.models import Quota
from spend.prices import forget_prices
from spend.quotas import current
from spend.services import price_set, quota_set

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 4, 15, 12, 30, tzinfo=UTC)  # April: a 30-day month
TARGET = "task/digest"
SONNET = WorstCase(tokens=920 * PAGE, money=Decimal("13.80"), models=("claude-sonnet-4-6",))
UNPRICED = WorstCase(tokens=920 * PAGE, money=None, models=("claude-fable-5-2",))
SCHEDULED = """---
schedule: "{when}"
loop:
  do:
    budget:
      size: 1b
---
Write the digest.
"""


@pytest.fixture(autouse=True)
def fresh_prices():
    """A price set here is cached past the test's rolled-back transaction: forget it."""
    forget_prices()
    yield
    forget_prices()


def used(quota: Quota, tokens: int = 0, micros: int = 0) -> None:
    """What the quota's current window has already settled (its figures as of NOW)."""
    current(quota, NOW)
    Quota.objects.filter(pk=quota.pk).update(used_tokens=F("used_tokens") + tokens, used_micros=micros)


def test_it_says_a_run_whose_worst_case_does_not_fit_may_pause():
    quota = quota_set(scope="installation", window="day", tokens=10 * BOOK, dollars=None)
    used(quota, tokens=10 * BOOK - 420 * PAGE)
    assert quota_lines(target=TARGET, user_id=None, worst=SONNET, now=NOW) == [
        "worst case 4.6b tokens ($13.80); today's installation quota has 2.1b tokens left — the run may pause"
    ]


def test_it_says_a_run_that_fits_fits_and_counts_tokens_and_dollars():
    quota_set(scope="recipe", target=TARGET, window="month", tokens=45 * BOOK, dollars=Decimal("50"))
    assert quota_lines(target=TARGET, user_id=None, worst=SONNET, now=NOW) == [
        "worst case 4.6b tokens ($13.80); this month's quota of recipe task/digest has 45b tokens and $50.00 left — fits"
    ]
    assert quota_lines(target="task/other", user_id=None, worst=SONNET, now=NOW) == []  # not this recipe's


def test_it_says_a_full_quota_pauses_the_run():
    quota = quota_set(scope="installation", window="rolling 24h", tokens=BOOK, dollars=None)
    used(quota, tokens=BOOK)
    [line] = quota_lines(target=TARGET, user_id=None, worst=SONNET, now=NOW)
    assert line.endswith("the last 24 h's installation quota has 0p tokens left — the run will pause")


def test_a_dollar_quota_with_a_model_that_has_no_price_pauses_for_want_of_one():
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("100"))
    assert quota_lines(target=TARGET, user_id=None, worst=UNPRICED, now=NOW) == [
        "worst case 4.6b tokens (n/a); today's installation quota is in dollars and claude-fable-5-2 has no price "
        "— the run will pause for want of a price"
    ]


def test_a_user_quota_counts_only_for_its_user():
    alice, bob = User.objects.create(username="alice"), User.objects.create(username="bob")
    quota_set(scope="user", user=alice, window="day", tokens=2 * BOOK, dollars=None)
    [line] = quota_lines(target=TARGET, user_id=alice.pk, worst=SONNET, now=NOW)
    assert "today's quota of user alice has 2b tokens left — the run may pause" in line
    assert quota_lines(target=TARGET, user_id=bob.pk, worst=SONNET, now=NOW) == []
    assert quota_lines(target=TARGET, user_id=None, worst=SONNET, now=NOW) == []


def test_it_warns_about_a_model_with_no_price_until_an_admin_sets_one(django_capture_on_commit_callbacks):
    assert price_warnings(["claude-fable-5-2", "claude-sonnet-4-6", "claude-fable-5-2", "scripted-demo"]) == [
        "model claude-fable-5-2 has no price: money shows as n/a and a dollar quota pauses its runs; "
        "set one with `auto price set` or on the Prices page"
    ]
    with django_capture_on_commit_callbacks(execute=True):
        price_set(
            model="claude-fable-5-2",
            input=Decimal(5),
            output=Decimal(25),
            cache_read=Decimal("0.5"),
            cache_write=Decimal("6.25"),
        )
    assert price_warnings(["claude-fable-5-2"]) == []


def test_the_worst_case_is_priced_with_the_admins_prices(django_capture_on_commit_callbacks):
    spec = parse_recipe(SCHEDULED.format(when="@daily"), path="digest.md", kind="task")
    plan = resolve(spec.do, spec.loop_while)
    assert worst_case_money(plan, executor="claude-fable-5-2", judge="claude-haiku-4-5") is None
    with django_capture_on_commit_callbacks(execute=True):
        price_set(model="claude-fable-5-2", input=Decimal(5), output=Decimal(25), cache_read=1, cache_write=Decimal(10))
    assert worst_case_money(plan, executor="claude-fable-5-2", judge="claude-haiku-4-5") == Decimal(
        5
    )  # at the dearest counted rate, output
    assert WorstCase.of(plan, executor="scripted-demo", judge="scripted-demo").money == 0  # offline: free


@pytest.mark.parametrize(
    "when, start, end, ticks",
    [
        ("0 7 * * *", datetime(2026, 4, 15, tzinfo=UTC), datetime(2026, 4, 16, tzinfo=UTC), 1),
        ("0 7 * * *", datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC), 30),
        ("0 0 * * *", datetime(2026, 4, 15, tzinfo=UTC), datetime(2026, 4, 16, tzinfo=UTC), 1),  # at the start
        ("@every 30m", datetime(2026, 4, 15, tzinfo=UTC), datetime(2026, 4, 16, tzinfo=UTC), 48),
        ("@hourly", datetime(2026, 4, 15, tzinfo=UTC), datetime(2026, 4, 16, tzinfo=UTC), 24),
        ("0 9 * * 1-5", datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC), 22),
    ],
)
def test_it_counts_a_schedules_ticks_in_a_window(when, start, end, ticks):
    assert ticks_in(when, "", start, end) == (ticks, False)


def test_it_stops_counting_a_very_busy_cron_at_the_cap():
    start, end = datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC)
    assert ticks_in("* * * * *", "", start, end) == (TICKS_CAP, True)


def test_a_schedule_is_weighed_against_each_quota_that_counts_the_recipe():
    quota_set(scope="installation", window="day", tokens=25 * BOOK, dollars=None)
    quota_set(scope="recipe", target=TARGET, window="month", tokens=None, dollars=Decimal("500"))
    worst = WorstCase(tokens=BOOK, money=Decimal("3.00"), models=("claude-sonnet-4-6",))
    assert schedule_lines(target=TARGET, when="@every 30m", worst=worst, now=NOW) == [
        "scheduled 48 times a day × worst case 1b = 2.4s tokens a day; today's installation quota is 25b tokens "
        "— runs will pause",
        "scheduled 1,440 times a month × worst case $3.00 = $4,320.00 a month; this month's quota of recipe "
        "task/digest is $500.00 — runs will pause",
    ]
    assert schedule_lines(target=TARGET, when="0 7 * * *", worst=worst, now=NOW) == [
        "scheduled 1 time a day × worst case 1b = 1b tokens a day; today's installation quota is 25b tokens — fits",
        "scheduled 30 times a month × worst case $3.00 = $90.00 a month; this month's quota of recipe "
        "task/digest is $500.00 — fits",
    ]


def test_a_scheduled_recipe_with_no_price_against_a_dollar_quota_says_runs_will_pause():
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("20"))
    [line] = schedule_lines(target=TARGET, when="@daily", worst=UNPRICED, now=NOW)
    assert line == (
        "scheduled 1 time a day; today's installation quota is in dollars and claude-fable-5-2 has no price "
        "— runs will pause for want of a price"
    )


def test_a_change_requests_recipe_shows_its_schedule_against_the_quotas():
    text = SCHEDULED.format(when="@every 30m")
    assert schedule_outlook(text=text, kind="task", name="digest", now=NOW) == [
        "scheduled 48 times a day × worst case 1b = 2.4s tokens a day; no quota limits it"
    ]
    quota_set(scope="installation", window="day", tokens=100 * BOOK, dollars=None)
    assert schedule_outlook(text=text, kind="task", name="digest", now=NOW) == [
        "scheduled 48 times a day × worst case 1b = 2.4s tokens a day; today's installation quota is 5s tokens — fits"
    ]
    assert schedule_outlook(text=SCHEDULED.format(when="off"), kind="task", name="digest", now=NOW) == []
    assert schedule_outlook(text="---\nloop: [\n---\n", kind="task", name="digest", now=NOW) == []
    assert schedule_outlook(text=None, kind="task", name="digest", now=NOW) == []


def test_the_run_forms_outlook_reads_the_recipe_as_written():
    quota_set(scope="installation", window="day", tokens=BOOK // 2, dollars=None)
    text = "---\nmodel: claude-fable-5-2\n---\nWrite the digest.\n"
    lines, warnings = recipe_outlook(text=text, path="digest.md", kind="task", user_id=None)
    assert len(lines) == 1 and "today's installation quota has 100p tokens left — the run may pause" in lines[0]
    assert lines[0].startswith("worst case ") and "(n/a)" in lines[0]
    assert [w.split(":")[0] for w in warnings] == ["model claude-fable-5-2 has no price"]
