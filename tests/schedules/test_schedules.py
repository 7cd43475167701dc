"""Schedules (docs/schedules.md): recipes' schedule: kept in step by the sync, hand-made ones from the CLI,
no backfill, headless scheduled runs, and 5 failures in a row disable one."""

from datetime import timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import Schedule
from django_q.scheduler import scheduler

from audit.models import AuditEntry
from catalogue.sync import recipes_sync
from runs.engine import finish_run
from runs.models import Run
from schedules import services as schedules
from schedules.models import RecipeSchedule
from schedules.services import ScheduleError, parse_when
from spend.quotas import quotas_for
from spend.services import quota_set
from tests.recipes_git import recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db

SCHEDULED = """---
schedule: "{when}"
args: [topic]
---
Write about {{{{topic}}}}.
"""
SCRIPT = "passes:\n  - task:\n      - text: Done.\n"
PLAIN = '---\nschedule: "{when}"\n---\nWrite the report.\n'


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def test_parse_when():
    assert parse_when("@daily") == {"schedule_type": Schedule.CRON, "cron": "0 0 * * *", "minutes": None}
    assert parse_when("@hourly")["cron"] == "0 * * * *"
    assert parse_when("@every 30m") == {"schedule_type": Schedule.MINUTES, "cron": None, "minutes": 30}
    assert parse_when("@every 90s")["minutes"] == 2  # whole minutes, rounded up
    assert parse_when("0 7 * * 1-5")["cron"] == "0 7 * * 1-5"
    for bad in ("sometimes", "@every soon", "61 * * * *", "* * *"):
        with pytest.raises(ScheduleError):
            parse_when(bad)


def test_the_sync_keeps_recipe_schedules_in_step_with_the_recipes(work):
    work.commit("schedule it", tasks__report=PLAIN.format(when="@daily"), tasks__digest=PLAIN.format(when="@every 30m"))
    recipes_sync()
    rows = {r.name: r for r in RecipeSchedule.objects.select_related("q")}
    assert set(rows) == {"auto-task-report", "auto-task-digest"}
    daily = rows["auto-task-report"].q
    assert (daily.func, daily.args, daily.schedule_type, daily.cron, daily.repeats) == (
        "schedules.tasks.scheduled_run",
        "('auto-task-report',)",
        Schedule.CRON,
        "0 0 * * *",
        -1,
    )
    assert daily.next_run > timezone.now()
    assert (rows["auto-task-digest"].q.schedule_type, rows["auto-task-digest"].q.minutes) == (Schedule.MINUTES, 30)

    work.commit("change and drop", tasks__report=PLAIN.format(when="0 7 * * *"), tasks__digest=PLAIN.format(when="off"))
    recipes_sync()
    assert list(RecipeSchedule.objects.values_list("name", "when")) == [("auto-task-report", "0 7 * * *")]
    assert Schedule.objects.get(name="auto-task-report").cron == "0 7 * * *"
    assert not Schedule.objects.filter(name="auto-task-digest").exists()

    work.commit("gone", tasks__report=None)
    recipes_sync()
    assert not RecipeSchedule.objects.exists() and not Schedule.objects.filter(name__startswith="auto-").exists()


@pytest.fixture
def due(work, monkeypatch, settings, tmp_path):
    """An every-30-minutes schedule whose worker was down for 5 hours (10 missed ticks)."""
    monkeypatch.setattr(Conf, "SYNC", True)  # django-q2 runs the fired task here and now
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the recipe's script runs it
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    work.write("tasks/report.script.yaml", SCRIPT)
    work.commit("schedule", tasks__report=SCHEDULED.format(when="@every 30m"))
    recipes_sync()
    Schedule.objects.filter(name="auto-task-report").update(next_run=timezone.now() - timedelta(hours=5))
    return RecipeSchedule.objects.get(name="auto-task-report")


def test_a_due_schedule_fires_once_without_backfill_and_starts_a_headless_run(due, settings, tmp_path):
    # the recipe needs an argument and has none: a failed tick, counted; then give it one
    scheduler()
    due.refresh_from_db()
    assert (due.failures, Run.objects.count()) == (1, 0)
    assert "needs 1 argument(s)" in due.last_message
    q = Schedule.objects.get(name="auto-task-report")
    assert timezone.now() < q.next_run <= timezone.now() + timedelta(minutes=30)  # one tick, not ten

    RecipeSchedule.objects.filter(pk=due.pk).update(args=["agents"])
    Schedule.objects.filter(pk=q.pk).update(next_run=timezone.now() - timedelta(hours=5))
    scheduler()
    scheduler()  # nothing is due any more: a second pass fires nothing
    run = Run.objects.get()
    assert (run.target, run.args, run.headless, run.state) == ("task/report", ["agents"], True, "queued")
    due.refresh_from_db()
    assert due.last_run == run and due.last_message == f"started run #{run.pk}"
    # the next tick finds it still active: skipped, and counted
    assert f"tick skipped: run #{run.pk} is still queued" in schedules.schedule_tick(due.name)
    finish_run(run, "fulfilled")
    due.refresh_from_db()
    assert due.failures == 0  # a good run resets the count


def test_five_failures_in_a_row_disable_a_schedule(due):
    for _attempt in range(1, 6):
        said = schedules.schedule_tick(due.name)
    assert "disabled after 5 failures in a row" in said
    due.refresh_from_db()
    assert (due.enabled, due.failures) == (False, 5) and due.disabled_reason.startswith("5 failures in a row")
    assert Schedule.objects.get(pk=due.q_id).repeats == 0  # django-q2 never fires repeats=0
    assert schedules.schedule_tick(due.name).endswith("gone or disabled; nothing to do")
    Schedule.objects.filter(pk=due.q_id).update(next_run=timezone.now() - timedelta(days=1))
    scheduler()
    assert Run.objects.count() == 0
    said = schedules.schedule_enable(name=due.name)
    due.refresh_from_db()
    q = Schedule.objects.get(pk=due.q_id)
    assert due.enabled and due.failures == 0 and q.repeats == -1 and q.next_run > timezone.now()


def test_a_run_that_ends_badly_counts_a_failure_and_a_stop_counts_nothing(due):
    RecipeSchedule.objects.filter(pk=due.pk).update(args=["x"])
    schedules.schedule_tick(due.name)
    run = Run.objects.get()
    finish_run(run, "error: boom")
    due.refresh_from_db()
    assert due.failures == 1 and due.last_message == f"run #{run.pk} ended: error: boom"
    schedules.schedule_tick(due.name)
    second = Run.objects.exclude(pk=run.pk).get()
    finish_run(second, "stopped by user")
    due.refresh_from_db()
    assert due.failures == 1


def test_hand_made_schedules_from_the_cli(work, settings):
    work.commit("x", tasks__report=SCHEDULED.format(when="off"))
    recipes_sync()
    out = auto("task", "schedule", "add", "morning", "0 7 * * 1-5", "report", "agents", "--tz", "Europe/Berlin")
    assert out.startswith("schedule morning: task run report agents at 0 7 * * 1-5 (Europe/Berlin); next run ")
    row = RecipeSchedule.objects.get(name="morning")
    berlin = row.q.next_run.astimezone(ZoneInfo("Europe/Berlin"))
    assert (berlin.hour, berlin.minute) == (7, 0) and berlin.weekday() < 5
    listing = auto("task", "schedule", "list")
    assert "morning" in listing and "manual" in listing and "Europe/Berlin" in listing and "enabled" in listing
    assert "disabled" in auto("task", "schedule", "disable", "morning")
    assert Schedule.objects.get(name="morning").repeats == 0
    assert "enabled; next run" in auto("task", "schedule", "enable", "morning")
    with pytest.raises(CommandError, match="already exists"):
        auto("task", "schedule", "add", "morning", "@daily", "report")
    with pytest.raises(CommandError, match="does not start with auto-"):
        auto("task", "schedule", "add", "auto-x", "@daily", "report")
    with pytest.raises(CommandError, match="no task recipe named 'nope'"):
        auto("task", "schedule", "add", "other", "@daily", "nope")
    with pytest.raises(CommandError, match="unknown timezone"):
        auto("task", "schedule", "add", "other", "@daily", "report", "--tz", "Mars/Olympus")
    with pytest.raises(CommandError, match="is not a schedule"):
        auto("task", "schedule", "add", "other", "whenever", "report")
    assert auto("task", "schedule", "rm", "morning") == "schedule morning removed\n"
    assert not Schedule.objects.filter(name="morning").exists()
    assert auto("task", "schedule", "list") == "no task schedules\n"


def test_a_recipe_schedule_is_removed_with_schedule_off_not_by_hand(work):
    work.commit("x", tasks__report=PLAIN.format(when="@hourly"))
    recipes_sync()
    with pytest.raises(CommandError, match="set `schedule: off`"):
        auto("task", "schedule", "rm", "auto-task-report")


def test_a_tick_of_an_owned_schedule_starts_the_run_for_its_owner(due):
    """A scheduled run counts against its owner's user quota and names them; a recipe's own
    schedule starts with no owner, and the CLI sets and clears one."""
    alice = User.objects.create(username="alice")
    RecipeSchedule.objects.filter(pk=due.pk).update(args=["agents"])
    assert due.owner is None
    said = auto("task", "schedule", "owner", due.name, "alice")
    assert (
        said.strip()
        == f"schedule {due.name} is owned by alice: its runs are started for them and count against their quota"
    )
    assert "alice" in next(line for line in auto("task", "schedule", "list").splitlines() if due.name in line)
    quota = quota_set(scope="user", user=alice, window="day", tokens=1_000, dollars=None)
    schedules.schedule_tick(due.name)
    run = Run.objects.get()
    assert run.user == alice
    assert [q.pk for q in quotas_for(target=run.target, user_id=run.user_id)] == [quota.pk]
    assert AuditEntry.objects.filter(action="schedule.owner", detail__owner="alice").exists()
    started = AuditEntry.objects.get(action="run.start", target_id=str(run.pk))
    assert started.actor is None and started.detail["for"] == "alice"  # alice did not start it: the schedule did

    finish_run(run, "fulfilled")
    assert "has no owner now" in auto("task", "schedule", "owner", due.name)
    schedules.schedule_tick(due.name)
    assert Run.objects.exclude(pk=run.pk).get().user is None


def test_a_hand_made_schedule_added_with_an_owner_runs_for_them(work, settings):
    User.objects.create(username="bob")
    work.commit("x", tasks__report=SCHEDULED.format(when="off"))
    recipes_sync()
    out = auto("task", "schedule", "add", "nightly", "@daily", "report", "x", "--owner", "bob")
    assert out.strip().endswith("; runs for bob")
    assert RecipeSchedule.objects.get(name="nightly").owner.username == "bob"
    listing = auto("task", "schedule", "list").splitlines()
    assert listing[0].split()[:3] == ["name", "origin", "owner"] and listing[1].split()[:3] == [
        "nightly",
        "manual",
        "bob",
    ]
    with pytest.raises(CommandError, match="no user named 'carol'"):
        auto("task", "schedule", "add", "other", "@daily", "report", "--owner", "carol")
    with pytest.raises(CommandError, match="no schedule named 'nope'"):
        auto("task", "schedule", "owner", "nope", "bob")
    assert not RecipeSchedule.objects.filter(name="other").exists()
