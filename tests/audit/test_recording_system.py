"""Who the audit log names (docs/security.md): a run woken because its quota has room again is
the system's doing, even inside the admin's request that raised the quota; "Send test" on a
channel and the catalogue's Sync button are recorded too."""

import pytest
from django.test import Client

from audit.models import AuditEntry
from notify.models import Delivery
from runs.models import Run, RunState
from spend.services import quota_set
from tests.conftest import drive
from tests.notify.test_views import hook  # noqa: F401 (fixture)
from tests.recipes_git import login, make_user, work  # noqa: F401
from tests.spend.test_quotas import TASK, greedy

pytestmark = pytest.mark.django_db
ADDRESS = "203.0.113.9"


@pytest.mark.django_db(transaction=True)  # the wake runs as the admin's request commits, inside it
def test_a_run_woken_by_a_raised_quota_is_continued_by_the_system_not_the_admin(start, monkeypatch):
    monkeypatch.setattr("runs.services.enqueue_run", lambda run_id: None)  # no worker here
    quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    run = drive(start(TASK), greedy())
    assert run.state_label == "paused(quota: installation)"
    admin = login(Client(), make_user("ada", role="admin"))
    response = admin.post(
        "/quotas/", {"scope": "installation", "window": "day", "tokens": "30b", "dollars": ""}, REMOTE_ADDR=ADDRESS
    )
    assert response.status_code == 302 and Run.objects.get(pk=run.pk).state == RunState.QUEUED
    raised = AuditEntry.objects.get(action="quota.set", detail__tokens=6_000_000)
    assert (raised.actor_name, raised.source, raised.address) == ("ada", "web", ADDRESS)
    woken = AuditEntry.objects.get(action="run.continue")
    assert (woken.actor, woken.actor_name, woken.source, woken.address) == (None, "", "system", None)
    assert woken.detail == {"paused": "quota: installation"}


def test_send_test_on_a_channel_is_recorded(hook):  # noqa: F811
    admin = login(Client(), make_user("ada", role="admin"))
    assert admin.post(f"/notifications/{hook.pk}/test/", REMOTE_ADDR=ADDRESS).status_code == 302
    row = AuditEntry.objects.get(action="channel.test")
    assert (row.actor_name, row.source, row.address) == ("ada", "web", ADDRESS)
    assert (row.target_type, row.target_id, row.target_label) == ("channel", str(hook.pk), "channel hook")
    assert row.detail == {"delivery": Delivery.objects.get().pk}


def test_the_sync_button_is_recorded_whether_git_answers_or_not(work, settings, tmp_path):  # noqa: F811
    operator = login(Client(), make_user("olga", role="operator"))
    operator.post("/recipes/sync/", REMOTE_ADDR=ADDRESS)
    row = AuditEntry.objects.get(action="recipes.sync")
    assert (row.actor_name, row.source, row.address, row.target_label) == ("olga", "web", ADDRESS, str(work.path))
    assert row.detail == {"head": work.head()[:12], "changed": 2, "versions": 2}

    settings.RYSH_RECIPES_REPO = "http://user:tok3n@127.0.0.1:9/x.git"  # nothing listens there
    settings.DATA_DIR = tmp_path / "data"
    operator.post("/recipes/sync/")
    failed = AuditEntry.objects.filter(action="recipes.sync").latest("id")
    assert failed.target_label == "http://***@127.0.0.1:9/x.git" and "127.0.0.1" in failed.detail["error"]
    assert "tok3n" not in failed.target_label + str(failed.detail)
    assert Client().post("/recipes/sync/").status_code == 302  # not logged in: refused, nothing written
    assert login(Client(), make_user("vera", role="viewer")).post("/recipes/sync/").status_code == 403
    assert AuditEntry.objects.filter(action="recipes.sync").count() == 2
