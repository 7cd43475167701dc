"""A recipe's own schedule has an owner (docs/schedules.md): the one set by hand, else the
service user RYSH_SCHEDULE_OWNER, else whoever approved the recipe's last change request. Its
runs are started for (and charged to) them; the CLI's list and the recipe page say who, and why."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from catalogue.sync import recipes_sync
from reviews.services import change_request_approve, change_request_open
from runs.models import Run
from schedules import services as schedules
from schedules.models import RecipeSchedule
from tests.recipes_git import login, make_user, work  # noqa: F401

pytestmark = pytest.mark.django_db
PLAIN = '---\nschedule: "{when}"\n---\nWrite the report.\n'
SCRIPT = "passes:\n  - task:\n      - text: Done.\n"


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def listed(name: str) -> str:
    return next(line for line in auto("task", "schedule", "list").splitlines() if line.startswith(name))


def approve(author, approver, text: str) -> None:
    change = change_request_open(user=author, kind="task", name="report", text=text)
    change = change_request_approve(change=change, user=approver, seen_head=change.head_sha)
    assert change.state == "merged"


@pytest.fixture
def scheduled(work, monkeypatch, settings, tmp_path):  # noqa: F811
    """task/report gets a daily schedule through a change request grace wrote and linus approved."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the recipe's script runs it
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    work.write("tasks/report.script.yaml", SCRIPT)
    work.commit("script")
    recipes_sync()
    grace, linus = make_user("grace"), make_user("linus")
    approve(grace, linus, PLAIN.format(when="@daily"))
    return RecipeSchedule.objects.get(name="auto-task-report")


def tick(row: RecipeSchedule) -> Run | None:
    before = set(Run.objects.values_list("pk", flat=True))
    schedules.schedule_tick(row.name)
    run = Run.objects.exclude(pk__in=before).first()
    if run is not None:
        Run.objects.filter(pk=run.pk).update(state="finished", cause="done")
    return run


def test_a_recipe_schedule_runs_for_whoever_approved_its_last_change(scheduled):
    assert scheduled.owner is None  # no owner of its own
    run = tick(scheduled)
    assert (run.user.username, run.charged_to.username) == ("linus", "linus")
    assert "linus (approved its last change)" in listed("auto-task-report")
    viewer = login(Client(), make_user("vera", role="viewer"))
    page = viewer.get("/recipes/task/report/").content.decode()
    assert '<span id="schedule-owner">runs for linus (approved its last change)</span>' in page

    ada = make_user("ada")
    approve(User.objects.get(username="grace"), ada, PLAIN.format(when="0 7 * * *"))  # a new approver
    assert tick(scheduled).user == ada and "ada (approved its last change)" in listed("auto-task-report")


def test_the_service_user_runs_the_schedules_without_an_owner(scheduled, settings):
    settings.RYSH_SCHEDULE_OWNER = "svc"
    svc = make_user("svc", role=None)
    assert tick(scheduled).user == svc
    assert "svc (RYSH_SCHEDULE_OWNER)" in listed("auto-task-report")
    svc.is_active = False
    svc.save()
    assert tick(scheduled) is None  # a service user that is not there: no run charged to nobody
    scheduled.refresh_from_db()
    assert scheduled.failures == 1
    assert scheduled.last_message == "tick failed: RYSH_SCHEDULE_OWNER names no active user 'svc'"
    assert "none (RYSH_SCHEDULE_OWNER names no active user 'svc')" in listed("auto-task-report")


def test_an_owner_set_by_hand_wins_and_clearing_it_falls_back(scheduled, settings):
    make_user("alice", role=None)
    auto("task", "schedule", "owner", scheduled.name, "alice")
    assert tick(scheduled).user.username == "alice"
    assert listed("auto-task-report").split()[2] == "alice"
    said = auto("task", "schedule", "owner", scheduled.name)
    assert said.strip() == (
        "schedule auto-task-report has no owner of its own now: its runs are started for "
        "linus (approved its last change) and count against their quota"
    )
    assert tick(scheduled).user.username == "linus"


def test_a_recipe_no_change_request_touched_says_its_runs_are_for_nobody(work, monkeypatch, settings, tmp_path):  # noqa: F811
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    work.write("tasks/report.script.yaml", SCRIPT)
    work.commit("straight to main", tasks__report=PLAIN.format(when="@daily"))
    recipes_sync()
    row = RecipeSchedule.objects.get(name="auto-task-report")
    assert tick(row).user is None
    assert listed("auto-task-report").split()[2] == "-"
    page = login(Client(), make_user("vera", role="viewer")).get("/recipes/task/report/").content.decode()
    assert "runs for nobody: the installation and recipe quotas only" in page
