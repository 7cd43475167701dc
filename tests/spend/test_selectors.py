"""The spend pages' reads (spend.selectors): spend per day and month by recipe and person, the
quota bars, the runs waiting on a quota, the price rows — aggregated in the database, in the
team's time zone, in a number of queries that does not grow with runs or ledger entries."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.models import LedgerEntry, Run, RunEvent, RunState
from runs.quota_waits import runs_paused_on_quota
from runs.selectors import spend_rows
from spend import selectors
from spend.models import Quota
from spend.prices import forget_prices
from spend.services import price_set, quota_set

pytestmark = pytest.mark.django_db

MODEL = "claude-sonnet-4-5"


@pytest.fixture(autouse=True)
def fresh_prices():
    """price_set clears the cached price table on commit, which a test's transaction never
    reaches: clear it around each test so no admin price set here outlives its test."""
    forget_prices()
    yield
    forget_prices()


def make_run(target: str = "task/notes", user=None, state: str = RunState.FINISHED, pause_reason: str = "") -> Run:
    kind, name = target.split("/", 1)
    return Run.objects.create(
        kind=kind,
        name=name,
        target=target,
        recipe_path=f"{name}.md",
        recipe_text="",
        user=user,
        provider="anthropic",
        executor_model=MODEL,
        judge_model=MODEL,
        output_dir="/tmp/out",
        state=state,
        pause_reason=pause_reason,
    )


def entry(run: Run, tokens: int, cost: str | None, at: datetime | None = None, model: str = MODEL) -> LedgerEntry:
    row = LedgerEntry.objects.create(
        run=run,
        pass_number=1,
        purpose="task",
        model=model,
        counted_tokens=tokens,
        cache_read_tokens=tokens // 10,
        cost=None if cost is None else Decimal(cost),
        charged_to_id=run.user_id,  # as the ledger charges a run nobody continued or granted
    )
    if at is not None:  # created_at is auto_now_add: move it afterwards
        LedgerEntry.objects.filter(pk=row.pk).update(created_at=at)
    return row


@pytest.fixture
def spent():
    """Today: alice's task/notes run (2 priced calls and 1 on a model with no price), bob's
    web/shop run (1 priced call); 40 days ago: one more call of alice's, outside 30 days."""
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    notes, shop = make_run("task/notes", alice), make_run("web/shop", bob)
    entry(notes, 10_000, "0.10")
    entry(notes, 5_000, "0.05")
    entry(notes, 7_000, None, model="claude-fable-5-2")
    entry(shop, 20_000, "1.00")
    entry(notes, 1_000, "9.00", at=timezone.now() - timedelta(days=40))
    return alice, bob


def last_30_days() -> dict:
    today = timezone.localdate()
    return {"period": "day", "since": today - timedelta(days=29), "until": today}


def test_it_sums_tokens_and_dollars_per_day_by_recipe(spent):
    rows = spend_rows(by="recipe", **last_30_days())
    today = timezone.localdate()
    assert [(r["bucket"], r["who"], r["tokens"], r["cost"], r["unpriced"], r["calls"]) for r in rows] == [
        (today, "task/notes", 22_000, Decimal("0.15"), 7_000, 3),
        (today, "web/shop", 20_000, Decimal("1.00"), 0, 1),
    ]


def test_it_sums_by_person_and_names_runs_no_one_started(spent):
    entry(make_run("task/cron"), 3_000, "0.03")
    rows = spend_rows(by="person", **last_30_days())
    assert [(r["who"], r["tokens"], r["cost"]) for r in rows] == [
        ("(nobody)", 3_000, Decimal("0.03")),
        ("alice", 22_000, Decimal("0.15")),
        ("bob", 20_000, Decimal("1.00")),
    ]


def test_it_leaves_cost_empty_when_no_call_was_priced():
    entry(make_run("task/new-model"), 4_000, None, model="claude-fable-5-2")
    (row,) = spend_rows(by="recipe", **last_30_days())
    assert row["cost"] is None and row["unpriced"] == 4_000
    (total,) = selectors.totals([row])
    assert total.cost_text == "n/a" and total.unpriced_text == "4p"


def test_it_counts_days_and_months_in_the_team_s_time_zone(settings):
    settings.TIME_ZONE = "America/New_York"
    run = make_run()
    entry(run, 1_000, "0.01", at=datetime(2026, 3, 1, 3, 0, tzinfo=ZoneInfo("UTC")))  # Feb 28, 22:00 in New York
    entry(run, 2_000, "0.02", at=datetime(2026, 3, 1, 6, 0, tzinfo=ZoneInfo("UTC")))  # Mar 1, 01:00
    days = spend_rows(by="recipe", period="day", since=date(2026, 2, 1), until=date(2026, 3, 31))
    assert [(r["bucket"], r["tokens"]) for r in days] == [(date(2026, 2, 28), 1_000), (date(2026, 3, 1), 2_000)]
    months = spend_rows(by="recipe", period="month", since=date(2026, 2, 1), until=date(2026, 3, 31))
    assert [(r["bucket"], r["tokens"]) for r in months] == [(date(2026, 2, 1), 1_000), (date(2026, 3, 1), 2_000)]
    assert selectors.buckets("month", date(2025, 12, 15), date(2026, 3, 31)) == [
        date(2025, 12, 1),
        date(2026, 1, 1),
        date(2026, 2, 1),
        date(2026, 3, 1),
    ]


def test_it_draws_the_biggest_spenders_and_puts_the_rest_in_other():
    for i in range(9):
        entry(make_run(f"task/r{i}"), (i + 1) * 1_000, "0.01")
    window = last_30_days()
    rows = spend_rows(by="recipe", **window)
    ranked = selectors.totals(rows)
    chart = selectors.chart(rows, ranked, measure="tokens", **{k: window[k] for k in ("period", "since", "until")})
    assert [name for _, name in chart.legend] == [
        "task/r8",
        "task/r7",
        "task/r6",
        "task/r5",
        "task/r4",
        "task/r3",
        "other",
    ]
    assert len(chart.bars) == 30
    today = chart.bars[-1]
    assert [s.series for s in today.segments] == [0, 1, 2, 3, 4, 5, 6]
    other = today.segments[-1]
    assert other.title == "other: 6p"  # r0..r2: 1p + 2p + 3p
    assert today.segments[-1].y == pytest.approx(selectors.TOP_PAD)  # the tallest bar reaches the top
    assert all(not bar.segments for bar in chart.bars[:-1])


def test_it_shows_a_quota_s_used_reserved_and_left():
    run = make_run()
    entry(run, 30_000, "0.30")
    quota = quota_set(scope="installation", window="day", tokens=100_000, dollars=Decimal("1"))
    selectors.quota_bar(quota)  # rolls the window over: counts today's ledger
    Quota.objects.filter(pk=quota.pk).update(reserved_tokens=20_000, reserved_micros=200_000)  # a call in flight
    bar = selectors.quota_bar(Quota.objects.get(pk=quota.pk))
    tokens, dollars = bar.axes
    assert (tokens.used_text, tokens.reserved_text, tokens.left_text, tokens.limit_text) == (
        "30p",
        "20p",
        "50p",
        "100p",
    )
    assert (tokens.used_pct, tokens.reserved_pct) == (30.0, 20.0)
    assert (dollars.used_text, dollars.reserved_text, dollars.left_text) == ("$0.30", "$0.20", "$0.50")
    tomorrow = timezone.localdate() + timedelta(days=1)
    assert bar.resets_at == datetime.combine(tomorrow, datetime.min.time(), tzinfo=ZoneInfo("UTC"))
    assert not bar.full


def test_it_picks_the_installation_s_day_quota_for_the_home_page():
    assert selectors.installation_quota_bar() is None
    quota_set(scope="recipe", target="task/notes", window="day", tokens=1_000, dollars=None)
    assert selectors.installation_quota_bar() is None
    quota_set(scope="installation", window="rolling 24h", tokens=9_000, dollars=None)
    quota_set(scope="installation", window="month", tokens=8_000, dollars=None)
    assert selectors.installation_quota_bar().quota.window == "month"
    quota_set(scope="installation", window="day", tokens=7_000, dollars=None)
    assert selectors.installation_quota_bar().quota.window == "day"


def test_it_lists_runs_waiting_on_a_quota_with_why():
    waiting = make_run("task/a", state=RunState.PAUSED, pause_reason="quota: installation")
    RunEvent.objects.create(run=waiting, kind="paused", message="paused(quota: installation): an older message")
    RunEvent.objects.create(
        run=waiting,
        kind="paused",
        message="paused(quota: installation): today's installation quota has 1,000 tokens left; this call needs up to 9,000 tokens",
    )
    make_run("task/b", state=RunState.PAUSED, pause_reason="worker lost")
    make_run("task/c", state=RunState.FINISHED, pause_reason="quota: user")
    with CaptureQueriesContext(connection) as queries:
        (row,) = runs_paused_on_quota()
    assert len(queries) == 2
    assert row.run == waiting
    assert row.why == "today's installation quota has 1,000 tokens left; this call needs up to 9,000 tokens"


def test_it_asks_the_same_number_of_queries_for_5_and_50_entries():
    quota_set(scope="installation", window="day", tokens=10**9, dollars=None)
    selectors.quota_bars()  # its window rolled over once, here, not in the first count

    def queries_for(entries: int) -> int:
        LedgerEntry.objects.all().delete()
        users = [User.objects.get_or_create(username=f"u{i}")[0] for i in range(5)]
        for i in range(entries):
            entry(make_run(f"task/r{i % 7}-{entries}", users[i % 5]), 1_000, None if i % 4 == 0 else "0.01")
        with CaptureQueriesContext(connection) as queries:
            for by in ("recipe", "person"):
                rows = spend_rows(by=by, **last_30_days())
                selectors.chart(rows, selectors.totals(rows), measure="tokens", **last_30_days())
            selectors.quota_bars()
            runs_paused_on_quota()
        assert sum(r["calls"] for r in rows) == entries
        return len(queries)

    assert queries_for(5) == queries_for(50)


def test_it_lists_built_in_and_admin_prices_and_flags_sdk_models_without_one():
    price_set(
        model="claude-mythos-5",
        input=Decimal("4"),
        output=Decimal("20"),
        cache_read=Decimal("0.4"),
        cache_write=Decimal("5"),
    )
    price_set(
        model="claude-sonnet-4-5",
        input=Decimal("2.5"),
        output=Decimal("12"),
        cache_read=Decimal("0.25"),
        cache_write=Decimal("3.1234"),
    )
    rows = {row.model: row for row in selectors.price_rows()}
    assert rows["claude-opus-4-6"].source == "the built-in table" and not rows["claude-opus-4-6"].admin
    assert rows["claude-mythos-5"].source == "set by an admin" and not rows["claude-mythos-5"].overrides
    assert rows["claude-sonnet-4-5"].overrides and rows["claude-sonnet-4-5"].rates == [
        "2.50",
        "12.00",
        "0.25",
        "3.1234",
        "5.00",  # no 1-hour write given: 2 × input
    ]
    assert rows["claude-haiku-4-5"].rates == ["1.00", "5.00", "0.10", "1.25", "2.00"]
    sdk = {row.model: row for row in selectors.sdk_price_rows(list(rows.values()))}
    assert "claude-fable-5-2" in selectors.sdk_models() and sdk["claude-fable-5-2"].price is None
    assert "claude-mythos-5" not in sdk  # it has its own row above now
    assert sdk["claude-sonnet-4-5-20250929"].priced_by == "claude-sonnet-4-5"  # a dated id, priced by its family


def test_it_lists_no_sdk_models_when_the_sdk_s_typing_changes(monkeypatch):
    import anthropic.types.model

    monkeypatch.delattr(anthropic.types.model, "Model")
    assert selectors.sdk_models() == []
