"""The Quotas page (`/quotas/`): everyone who can view reads it; admins add, change and remove
quotas through spend.services, with every refusal shown beside its field (Django test client)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from catalogue.models import Recipe
from spend import services
from spend.models import Quota
from spend.services import quota_set
from tests.runs.test_view_runs import client_for, user_with
from tests.spend.conftest import field_error

pytestmark = pytest.mark.django_db

DAILY = {"scope": "installation", "window": "day", "tokens": "2b", "dollars": ""}


def test_it_needs_a_login(client):
    assert client.get("/quotas/")["Location"].startswith("/login/")
    assert client.post("/quotas/", DAILY)["Location"].startswith("/login/")
    assert not Quota.objects.exists()


def test_a_viewer_reads_the_list_without_forms_and_cannot_post(admin):
    quota = quota_set(scope="installation", window="day", tokens=400_000, dollars=None)
    for role in ("viewer", "operator", "editor"):
        reader = client_for(user_with(role))
        page = reader.get("/quotas/").content.decode()
        assert "Today&#x27;s installation quota" in page and "2b tokens per calendar day" in page
        assert "Save quota" not in page and "Remove…" not in page
        assert reader.post("/quotas/", {**DAILY, "tokens": "9b"}).status_code == 403
        assert reader.get(f"/quotas/{quota.pk}/remove/").status_code == 403
        assert reader.post(f"/quotas/{quota.pk}/remove/").status_code == 403
    assert Quota.objects.get().tokens == 400_000


def test_an_admin_sets_a_daily_quota_in_budget_sizes(admin):
    response = admin.post("/quotas/", DAILY, follow=True)
    quota = Quota.objects.get()
    assert (quota.scope, quota.window, quota.tokens, quota.micros) == ("installation", "day", 400_000, None)
    page = response.content.decode()
    assert "today&#x27;s installation quota set to 2b tokens" in page
    entry = AuditEntry.objects.get(action="quota.set")
    assert entry.actor.username == "admin-user"


def test_it_refuses_a_size_it_cannot_read_and_says_why_beside_the_field(admin):
    response = admin.post("/quotas/", {**DAILY, "tokens": "2m"})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="id_tokens_error"' in page
    assert "expected a budget size such as 20p, 4b or 1s (a bare number means pages), got &#x27;2m&#x27;" in page
    assert 'value="2m"' in page  # what was typed stays
    assert not Quota.objects.exists()


def test_it_sets_a_dollar_quota_for_a_recipe_from_the_catalogue(admin):
    Recipe.objects.create(kind="task", name="notes", path="tasks/notes.md")
    Recipe.objects.create(kind="web", name="gone", path="webs/gone.md", archived=True)
    page = admin.get("/quotas/").content.decode()
    assert '<option value="task/notes">task/notes</option>' in page and "web/gone" not in page
    admin.post("/quotas/", {"scope": "recipe", "recipe": "task/notes", "window": "month", "dollars": "12.50"})
    quota = Quota.objects.get()
    assert (quota.target, quota.window, quota.tokens, quota.micros) == ("task/notes", "month", None, 12_500_000)


def test_it_sets_a_person_s_quota_in_tokens_and_dollars(admin):
    alice = User.objects.create_user("alice")
    admin.post("/quotas/", {"scope": "user", "user": alice.pk, "window": "rolling 24h", "tokens": "1s", "dollars": "5"})
    quota = Quota.objects.get()
    assert (quota.user, quota.window, quota.tokens, quota.dollars) == (alice, "rolling 24h", 4_000_000, Decimal(5))


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({**DAILY, "tokens": ""}, "tokens", "give tokens, dollars or both"),
        ({**DAILY, "scope": "recipe"}, "recipe", "choose the recipe this quota limits"),
        ({**DAILY, "scope": "user"}, "user", "choose the person this quota limits"),
        ({**DAILY, "window": "week"}, "window", "Select a valid choice. week is not one of the available choices."),
        ({**DAILY, "dollars": "-1"}, "dollars", "Ensure this value is greater than or equal to 0.01."),
        ({**DAILY, "tokens": "0"}, "tokens", "expected a budget size such as 20p, 4b or 1s"),
    ],
)
def test_it_shows_each_error_beside_its_field(admin, data, field, message):
    response = admin.post("/quotas/", data)
    assert response.status_code == 400
    assert message in field_error(response.content.decode(), field)
    assert not Quota.objects.exists()


def test_it_shows_what_the_service_refused(admin, monkeypatch):
    def refuse(**kwargs):
        raise services.QuotaError("installation quota over day was set by someone else meanwhile; look again")

    monkeypatch.setattr(services, "quota_set", refuse)
    response = admin.post("/quotas/", DAILY)
    assert response.status_code == 400
    assert "installation quota over day was set by someone else meanwhile; look again" in response.content.decode()


def test_setting_the_same_quota_again_changes_it_and_the_change_link_fills_the_form(admin):
    admin.post("/quotas/", DAILY)
    quota = Quota.objects.get()
    page = admin.get(f"/quotas/?edit={quota.pk}").content.decode()
    assert 'name="tokens" value="2b"' in page and '<option value="day" selected>' in page
    admin.post("/quotas/", {**DAILY, "tokens": "3b", "dollars": "7"})
    quota = Quota.objects.get()
    assert (quota.tokens, quota.dollars) == (600_000, Decimal(7))


def test_an_admin_removes_a_quota_after_confirming(admin):
    quota = quota_set(scope="installation", window="day", tokens=400_000, dollars=None)
    confirm = admin.get(f"/quotas/{quota.pk}/remove/")
    assert confirm.status_code == 200 and "Remove today&#x27;s installation quota?" in confirm.content.decode()
    assert Quota.objects.exists()  # a GET only asks
    page = admin.post(f"/quotas/{quota.pk}/remove/", follow=True).content.decode()
    assert not Quota.objects.exists() and "today&#x27;s installation quota removed" in page
    assert AuditEntry.objects.filter(action="quota.remove").exists()


def test_it_needs_the_csrf_token(admin):
    strict = client_for(User.objects.get(username="admin-user"), csrf=True)
    assert strict.post("/quotas/", DAILY).status_code == 403
    page = strict.get("/quotas/").content.decode()
    token = page.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    assert strict.post("/quotas/", {**DAILY, "csrfmiddlewaretoken": token}).status_code == 302
    assert Quota.objects.get().tokens == 400_000


def test_it_escapes_a_recipe_target_in_the_list(admin):
    quota_set(scope="recipe", target="task/<script>x</script>", window="day", tokens=1_000, dollars=None)
    page = client_for(user_with("viewer")).get("/quotas/").content.decode()
    assert "<script>x</script>" not in page and "recipe task/&lt;script&gt;x&lt;/script&gt;" in page
