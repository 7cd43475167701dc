"""schedule.disabled and change.opened / approved / conflict, from the real services."""

from __future__ import annotations

import pytest

from catalogue.sync import recipes_sync
from notify import services
from notify.models import Delivery
from reviews.services import change_request_approve, change_request_open
from schedules import services as schedules
from tests.recipes_git import git, make_user, recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db


def channel(name, events):
    return services.channel_save(user=None, name=name, kind="email", recipients="a@example.com", events_wanted=events)[
        0
    ]


def test_a_schedule_disabled_after_failures_notifies(settings, tmp_path):
    settings.RYSH_RECIPES_REPO = str(tmp_path)  # the recipe is missing: every tick fails
    channel("ops", ["schedule.disabled"])
    schedules.schedule_add(name="nightly", kind="task", recipe="ghost", args=[], when="@daily")
    for _ in range(settings.RYSH_SCHEDULE_MAX_FAILURES - 1):
        schedules.schedule_tick("nightly")
    assert not Delivery.objects.exists()
    schedules.schedule_tick("nightly")
    delivery = Delivery.objects.get()
    assert delivery.event == "schedule.disabled"
    assert delivery.payload["data"]["schedule"] == "nightly"
    assert delivery.payload["data"]["reason"].startswith("5 failures in a row")


def test_change_requests_notify_when_opened_approved_and_in_conflict(work):
    channel("reviews", ["change.opened", "change.approved", "change.conflict"])
    grace, linus = make_user("grace"), make_user("linus")
    recipes_sync()
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("five"), message="Five")
    change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    clash = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"), message="Ours")
    work.commit("Same lines elsewhere", tasks__report=recipe_text("theirs"))
    change_request_approve(change=clash, user=linus, seen_head=clash.head_sha)
    got = [(d.event, d.payload["data"]["change"]) for d in Delivery.objects.order_by("id")]
    assert got == [
        ("change.opened", change.pk),
        ("change.approved", change.pk),
        ("change.opened", clash.pk),
        ("change.conflict", clash.pk),
    ]
    assert Delivery.objects.order_by("id").first().payload["link"].endswith(f"/changes/{change.pk}/")
