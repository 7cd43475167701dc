"""Re-judges have bounds (docs/judge-workbench.md): one per change request at a time (the database
keeps it so), so many a day per person (RYSH_REJUDGE_DAILY_MAX, the calendar day in
TIME_ZONE), and a press counts only for the estimate the page showed."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from runs.models import Rejudge, RejudgeState
from runs.workbench import rejudge as rj
from runs.worker import execute_rejudge
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import login, make_user, work  # noqa: F401
from tests.reviews.test_view_rejudge import history, propose, queued, seen  # noqa: F401 (fixtures)
from tests.runs.rejudge_fixtures import judged_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def idle(monkeypatch):
    """No worker picks a re-judge up: it stays queued."""
    monkeypatch.setattr(rj, "async_task", lambda *a, **kw: None)


def post(client, change, fields):
    return client.post(f"/changes/{change.pk}/rejudge/", fields, follow=True).content.decode()


def test_it_refuses_a_second_rejudge_of_a_change_while_one_is_queued_and_names_it(
    fake_anthropic, grace, linus, history, idle
):
    change = propose(grace)
    fields = seen(linus, change, 2)
    post(linus, change, fields)
    first = Rejudge.objects.get()
    ada = login(Client(), make_user("ada"))  # another editor, the same change
    page = post(ada, change, fields)
    assert f"re-judge #{first.pk} of this change (started by linus at " in page and "is still queued" in page
    assert "one at a time" in page and Rejudge.objects.count() == 1
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert f"Re-judge #{first.pk} of this change is still queued: one at a time." in page
    assert 'name="estimate"' not in page  # no button while it waits
    Rejudge.objects.filter(pk=first.pk).update(state=RejudgeState.RUNNING)
    assert "is still running" in post(grace, change, fields) and Rejudge.objects.count() == 1

    Rejudge.objects.filter(pk=first.pk).update(state=RejudgeState.FINISHED, cause="done")
    post(ada, change, seen(ada, change, 2))
    assert Rejudge.objects.count() == 2  # finished: the next one may start


def test_the_database_keeps_one_active_rejudge_per_change(fake_anthropic, grace, linus, history, idle, monkeypatch):
    change = propose(grace)
    fields = seen(linus, change, 1)
    post(linus, change, fields)
    first = Rejudge.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Rejudge.objects.create(
            change_request=change,
            target=first.target,
            until="x",
            judge_model="m",
            provider="p",
            requested=1,
            budget_tokens=1,
        )
    # two presses at once: both read "nothing running", the constraint refuses the second
    looked = []
    real = rj.rejudge_active

    def first_look_finds_nothing(change):
        looked.append(change)
        return None if len(looked) == 1 else real(change)

    monkeypatch.setattr(rj, "rejudge_active", first_look_finds_nothing)
    with pytest.raises(rj.RejudgeRefused, match=f"re-judge #{first.pk} of this change .* is still queued"):
        rj.rejudge_start(
            kind="task", name="report", until=first.until, judge_model="claude-haiku-4-5", n=1, change_request=change
        )
    assert Rejudge.objects.count() == 1
    # other changes, and the CLI's re-judges (no change), are not held by it
    rj.rejudge_start(kind="task", name="report", until=first.until, judge_model="claude-haiku-4-5", n=1)
    rj.rejudge_start(kind="task", name="report", until=first.until, judge_model="claude-haiku-4-5", n=1)
    assert Rejudge.objects.count() == 3


def test_it_caps_the_rejudges_one_person_starts_in_a_day(fake_anthropic, grace, linus, history, queued, settings):
    settings.RYSH_REJUDGE_DAILY_MAX = 2
    ids, capture = queued
    change = propose(grace)

    def press(client):
        with capture(execute=True):
            page = post(client, change, seen(client, change, 1))
        for rejudge_id in ids:
            execute_rejudge(rejudge_id)
        ids.clear()
        return page

    press(linus)
    assert "you have started 1 of your 2 re-judges today" in linus.get(f"/changes/{change.pk}/").content.decode()
    press(linus)
    assert Rejudge.objects.filter(requested_by__username="linus").count() == 2
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "You have started 2 re-judges today, the most one person may (2 a day)." in page
    assert 'name="estimate"' not in page
    fields = seen(grace, change, 1)
    page = post(linus, change, fields)  # pressed anyway (an old tab)
    assert "you have started 2 re-judges today, the most one person may (RYSH_REJUDGE_DAILY_MAX)" in page
    assert Rejudge.objects.filter(requested_by__username="linus").count() == 2
    press(grace)  # another person has their own count
    assert Rejudge.objects.filter(requested_by__username="grace").count() == 1
    Rejudge.objects.filter(requested_by__username="linus").update(
        created_at=datetime(2020, 1, 1, tzinfo=ZoneInfo("UTC"))
    )
    press(linus)  # those were another day's
    assert Rejudge.objects.filter(requested_by__username="linus").count() == 3


def test_the_day_is_the_calendar_day_in_time_zone(fake_anthropic, linus, settings):
    settings.TIME_ZONE = "America/New_York"
    person = make_user("tz")
    late = Rejudge.objects.create(
        target="task/report",
        until="x",
        judge_model="m",
        provider="p",
        requested=1,
        budget_tokens=1,
        requested_by=person,
    )
    Rejudge.objects.filter(pk=late.pk).update(created_at=datetime(2026, 12, 1, 4, 0, tzinfo=ZoneInfo("UTC")))
    # 04:00 UTC is 23:00 the day before in New York: not today at 06:00 UTC (01:00 there)
    assert rj.rejudges_today(person, now=datetime(2026, 12, 1, 6, 0, tzinfo=ZoneInfo("UTC"))) == 0
    assert rj.rejudges_today(person, now=datetime(2026, 12, 1, 3, 0, tzinfo=ZoneInfo("UTC"))) == 1
    settings.TIME_ZONE = "UTC"
    assert rj.rejudges_today(person, now=datetime(2026, 12, 1, 6, 0, tzinfo=ZoneInfo("UTC"))) == 1
    assert rj.rejudges_today(person, now=datetime(2026, 12, 1, 6, 0, tzinfo=ZoneInfo("UTC")) + timedelta(days=1)) == 0


def test_it_refuses_a_press_on_an_estimate_that_changed(fake_anthropic, grace, linus, history, tmp_path, idle):
    change = propose(grace)
    page = linus.get(f"/changes/{change.pk}/?n=10").content.decode()
    estimate_line = page.index('id="rejudge-estimate"')
    assert estimate_line < page.index('name="estimate"') < page.index("Re-judge 3 passes")  # shown before the button
    fields = seen(linus, change, 10)
    judged_run(tmp_path / "c", [("YES", "R4 four sources")])  # a run ended meanwhile: 4 passes now
    page = post(linus, change, fields)
    assert "the estimate changed since your page showed it; it is now: re-judge 4 pass(es) of task/report" in page
    assert "Read it, then press Re-judge again." in page and Rejudge.objects.count() == 0
    assert "estimate changed" in post(linus, change, {"n": 10}) and Rejudge.objects.count() == 0  # none seen
    post(linus, change, seen(linus, change, 10))
    assert Rejudge.objects.get().items.count() == 4


def test_it_refuses_a_press_after_the_goal_was_revised(fake_anthropic, grace, linus, history, idle):
    change = propose(grace)
    fields = seen(linus, change, 10)
    text = change.proposed_text.replace("three sources", "four sources")
    grace.post(f"/changes/{change.pk}/edit/", {"text": text, "message": "Four"})
    change.refresh_from_db()
    assert "four sources" in change.proposed_text
    assert "the estimate changed" in post(linus, change, fields) and Rejudge.objects.count() == 0
