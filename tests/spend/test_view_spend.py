"""The Spend page (`/spend/`), its CSV (`/spend.csv`) and the home page's quota bar (Django
test client): who may read them, the figures, escaping, and a query count that stays flat."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.models import LedgerEntry, RunEvent, RunState
from spend.models import Quota
from spend.services import quota_set
from tests.runs.test_view_runs import client_for, user_with
from tests.spend.test_selectors import entry, fresh_prices, make_run, spent  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer():
    return client_for(user_with("viewer"))


def csv_rows(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_it_needs_a_login(client):
    for url in ("/spend/", "/spend.csv"):
        assert client.get(url)["Location"].startswith("/login/")


def test_it_lets_every_role_read_and_links_it_in_the_nav(viewer):
    response = viewer.get("/spend/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/spend/"' in page and 'href="/quotas/"' in page and 'href="/prices/"' in page
    assert 'href="/spend/"' in viewer.get("/history/").content.decode()


def test_it_shows_tokens_and_dollars_by_recipe_with_unpriced_tokens_apart(viewer, spent):
    page = viewer.get("/spend/").content.decode()
    assert '<td><span class="swatch s0"></span>task/notes</td>' in page  # the biggest spender first
    assert '<td title="22000 tokens">22p</td>\n    <td>$0.15</td>' in page
    assert '<td title="20000 tokens">20p</td>\n    <td>$1.00</td>' in page
    assert '<td>all</td><td title="42000 tokens">42p</td><td>$1.15</td><td>7p</td>' in page
    assert 'id="unpriced-note">7p of these tokens ran on models with no price' in page
    assert "$9.00" not in page  # 40 days ago: outside the default 30 days
    assert page.count("<rect class=") == 2  # today's bar: two recipes stacked


def test_it_shows_spend_by_person_per_month(viewer, spent):
    page = viewer.get("/spend/?by=person&period=month").content.decode()
    assert '<span class="swatch s0"></span>alice</td>' in page and '<span class="swatch s1"></span>bob</td>' in page
    assert '<td title="43000 tokens">43p</td><td>$10.15</td>' in page  # 12 months: the old call is in
    assert '<strong class="current">per month</strong>' in page and '<strong class="current">by person</strong>' in page


def test_it_shows_n_a_for_spend_no_call_of_which_was_priced(viewer):
    entry(make_run("task/new-model"), 4_000, None, model="claude-fable-5-2")
    page = viewer.get("/spend/").content.decode()
    assert '<td title="4000 tokens">4p</td>\n    <td>n/a</td>' in page
    assert "4p of these tokens ran on models with no price" in page


def test_the_offline_scripted_models_tokens_are_free_not_unpriced(viewer):
    entry(make_run("task/demo"), 3_000, None, model="scripted-demo")
    page = viewer.get("/spend/").content.decode()
    assert 'id="offline-note">3p of these tokens ran on the offline scripted model' in page
    assert "unpriced-note" not in page and "set their prices" not in page.lower()


def test_it_exports_the_same_rows_as_csv(viewer, spent):
    today = timezone.localdate().isoformat()
    rows = csv_rows(viewer.get("/spend.csv"))
    assert rows == [
        ["period", "recipe", "tokens_counted", "cache_read", "cost_usd", "unpriced_tokens", "calls"],
        [today, "task/notes", "22000", "2200", "0.150000", "7000", "3"],
        [today, "web/shop", "20000", "2000", "1.000000", "0", "1"],
    ]
    month = timezone.localdate().strftime("%Y-%m")
    by_person = csv_rows(viewer.get("/spend.csv?by=person&period=month"))
    assert by_person[0][1] == "person" and [month, "bob", "20000", "2000", "1.000000", "0", "1"] in by_person


def test_it_escapes_recipe_and_user_names_and_defuses_csv_formulas(viewer):
    hostile = User.objects.create_user("=HYPERLINK(1)")
    entry(make_run("task/<script>alert(1)</script>", hostile), 1_000, "0.01")
    page = viewer.get("/spend/").content.decode()
    assert "<script>alert(1)</script>" not in page and "task/&lt;script&gt;alert(1)&lt;/script&gt;" in page
    rows = csv_rows(viewer.get("/spend.csv?by=person"))
    assert rows[1][1] == "'=HYPERLINK(1)"


def test_it_answers_a_bad_filter_with_400_on_the_page_and_the_csv(viewer, spent):
    response = viewer.get("/spend/?since=2026-13-45&by=person")
    assert response.status_code == 400
    page = response.content.decode()
    assert "from: Enter a valid date." in page and "Fix the filters above to see spend." in page
    assert 'value="2026-13-45"' in page and '<input type="hidden" name="by" value="person">' in page
    csv_response = viewer.get("/spend.csv?by=robot")
    assert csv_response.status_code == 400 and "by: Select a valid choice." in csv_response.content.decode()


def test_it_filters_a_day_range(viewer, spent):
    old = (timezone.localdate() - timedelta(days=40)).isoformat()
    rows = csv_rows(viewer.get(f"/spend.csv?since={old}&until={old}"))
    assert rows[1:] == [[old, "task/notes", "1000", "100", "9.000000", "0", "1"]]


def test_it_shows_each_quota_s_bar_and_the_runs_waiting_on_one(viewer, spent):
    quota_set(scope="installation", window="day", tokens=100_000, dollars=None)
    waiting = make_run("task/waits", state=RunState.PAUSED, pause_reason="quota: installation")
    RunEvent.objects.create(
        run=waiting, kind="paused", message="paused(quota: installation): today's installation quota has 2p left"
    )
    page = viewer.get("/spend/").content.decode()
    assert "Today&#x27;s installation quota" in page and "100p tokens per calendar day" in page
    assert 'used <strong>42p</strong> · reserved now 0p · left <strong class="left">58p</strong> of 100p tokens' in page
    assert f'<a href="/runs/{waiting.pk}/">#{waiting.pk}</a>' in page
    assert "paused(quota: installation)</span>" in page and "today&#x27;s installation quota has 2p left" in page


def test_it_asks_the_same_number_of_queries_for_5_and_50_entries(viewer):
    quota_set(scope="installation", window="day", tokens=10**9, dollars=None)
    viewer.get("/spend/")  # the quota's window rolls over here, not in the first count

    def queries_for(entries: int) -> int:
        LedgerEntry.objects.all().delete()
        for i in range(entries):
            entry(make_run(f"task/r{i % 9}", User.objects.get_or_create(username=f"u{i % 4}")[0]), 1_000, "0.01")
        make_run(f"task/waits-{entries}", state=RunState.PAUSED, pause_reason="quota: installation")
        with CaptureQueriesContext(connection) as queries:
            page = viewer.get("/spend/").content.decode()
        assert f'<td>all</td><td title="{entries * 1000} tokens">' in page
        return len(queries)

    assert queries_for(5) == queries_for(50)


def test_the_home_page_shows_the_installation_quota_bar_only_when_there_is_one(viewer):
    entry(make_run(), 10_000, "0.10")
    assert 'id="home-quota"' not in viewer.get("/").content.decode()
    quota_set(scope="recipe", target="task/notes", window="day", tokens=50_000, dollars=None)
    assert 'id="home-quota"' not in viewer.get("/").content.decode()
    quota = quota_set(scope="installation", window="month", tokens=200_000, dollars=None)
    page = viewer.get("/").content.decode()
    assert 'id="home-quota"' in page and f'id="quota-{quota.pk}"' in page
    assert 'used <strong>10p</strong> · reserved now 0p · left <strong class="left">190p</strong> of 1b tokens' in page
    assert '<a href="/spend/">Spend by recipe and person →</a>' in page
    assert Quota.objects.get(pk=quota.pk).used_tokens == 10_000


def test_the_home_page_s_pushes_do_not_read_quotas(viewer):
    quota_set(scope="installation", window="day", tokens=200_000, dollars=None)
    response = viewer.get("/", HTTP_HX_REQUEST="true")  # the live sections only
    assert response.status_code == 200 and 'id="home-quota"' not in response.content.decode()


def test_it_shows_a_rejudges_calls_as_their_own_row_and_counts_them_in_quotas(viewer, spent):
    from runs.models import Rejudge
    from spend.quotas import spent_since

    alice, _ = spent
    rejudge = Rejudge.objects.create(
        target="task/notes", until="x", judge_model="claude-haiku-4-5", provider="anthropic", requested=1,
        budget_tokens=5_000, requested_by=alice,
    )  # fmt: skip
    LedgerEntry.objects.create(
        run=None, rejudge=rejudge, pass_number=0, purpose="rejudge", model="claude-haiku-4-5", counted_tokens=3_000,
        cost="0.02", charged_to=alice,
    )  # fmt: skip
    orphan = Rejudge.objects.create(
        target="web/shop", until="x", judge_model="m", provider="anthropic", requested=1, budget_tokens=1
    )
    LedgerEntry.objects.create(
        run=None, rejudge=orphan, pass_number=0, purpose="rejudge", model="m", counted_tokens=500
    )  # fmt: skip
    orphan.delete()  # its ledger entry stays, with neither a run nor a re-judge
    today = timezone.localdate().isoformat()
    rows = csv_rows(viewer.get("/spend.csv"))
    assert [today, "re-judge of task/notes", "3000", "0", "0.020000", "0", "1"] in rows
    assert [today, "(re-judge)", "500", "0", "", "500", "1"] in rows
    assert [today, "task/notes", "22000", "2200", "0.150000", "7000", "3"] in rows  # runs' rows unchanged
    by_person = csv_rows(viewer.get("/spend.csv?by=person"))
    assert [today, "alice", "25000", "2200", "0.170000", "7000", "4"] in by_person
    page = viewer.get("/spend/").content.decode()
    assert "re-judge of task/notes" in page
    start = timezone.now() - timedelta(hours=1)
    recipe = quota_set(scope="recipe", target="task/notes", window="day", tokens=10**6, dollars=None)
    person = quota_set(scope="user", user=alice, window="day", tokens=10**6, dollars=None)
    assert spent_since(recipe, start)[0] == 15_000 + 7_000 + 3_000
    assert spent_since(person, start)[0] == 15_000 + 7_000 + 3_000
    assert spent_since(Quota(scope="installation"), start)[0] == 22_000 + 20_000 + 3_000 + 500
