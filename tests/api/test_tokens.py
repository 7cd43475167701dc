"""API tokens: made on the profile page (shown once, stored hashed), revoked there, expiring;
only `Authorization: Bearer` opens the API; last use is noted; making and revoking are audited."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from api.models import ApiRateWindow, ApiToken
from api.services import digest_of, rate_take, token_create
from audit.models import AuditEntry
from tests.api.conftest import Api, user_with

pytestmark = pytest.mark.django_db


def logged_in(user, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def test_it_shows_the_secret_once_and_stores_only_its_hash():
    alice = user_with("operator", "alice")
    page = logged_in(alice).post("/account/tokens/", {"name": "ci", "scopes": ["operate"], "days": "30"})
    assert page.status_code == 200 and page["Cache-Control"].startswith("max-age=0")
    secret = re.search(r'<code id="token-secret">(rysh_[\w-]+)</code>', page.content.decode()).group(1)
    token = ApiToken.objects.get(owner=alice, name="ci")
    assert token.digest == digest_of(secret) and token.prefix == secret[:12] and token.scopes == ["operate"]
    stored = [str(v) for v in ApiToken.objects.values_list(*[f.attname for f in ApiToken._meta.fields]).get()]
    assert not any(secret in value or secret[12:] in value for value in stored)  # the secret is nowhere
    again = logged_in(alice).get("/account/tokens/").content.decode()
    assert secret not in again and f"{secret[:12]}…" in again and "never" in again  # last use: never
    entry = AuditEntry.objects.get(action="token.create")
    assert entry.actor == alice and entry.detail == {"owner": "alice", "scopes": ["operate"]}


def test_the_token_page_is_linked_from_the_nav_and_needs_a_login():
    alice = user_with("viewer", "alice")
    assert 'href="/account/tokens/"' in logged_in(alice).get("/").content.decode()
    assert Client().get("/account/tokens/").status_code == 302


def test_revoking_needs_the_csrf_token_and_then_the_token_is_refused_at_once():
    alice = user_with("operator", "alice")
    made = token_create(owner=alice, name="ci", scopes=["read"], days=7, by=alice)
    assert Api(made.secret).get("/api/runs").status_code == 200
    assert logged_in(alice, csrf=True).post(f"/account/tokens/{made.token.pk}/revoke/").status_code == 403
    assert logged_in(alice).post(f"/account/tokens/{made.token.pk}/revoke/").status_code == 302
    answer = Api(made.secret).get("/api/runs")
    assert answer.status_code == 401 and answer.json()["message"] == "API token 'ci' was revoked"
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert AuditEntry.objects.filter(action="token.revoke", actor=alice).count() == 1


def test_a_person_cannot_revoke_someone_elses_token_but_an_admin_can():
    alice, bob, boss = user_with("operator", "alice"), user_with("operator", "bob"), user_with("admin", "boss")
    made = token_create(owner=alice, name="ci", scopes=["read"], days=7, by=alice)
    assert logged_in(bob).post(f"/account/tokens/{made.token.pk}/revoke/").status_code == 404
    assert logged_in(boss).post(f"/account/tokens/{made.token.pk}/revoke/").status_code == 302
    made.token.refresh_from_db()
    assert made.token.status == "revoked"


def test_an_admin_makes_a_token_for_a_service_user_and_others_cannot():
    boss, bot = user_with("admin", "boss"), user_with("operator", "ci-bot")
    page = logged_in(boss).post(
        "/account/tokens/", {"name": "deploy", "scopes": ["operate"], "days": "90", "owner": bot.pk}
    )
    assert page.status_code == 200 and "for ci-bot made" in page.content.decode()
    token = ApiToken.objects.get(name="deploy")
    assert token.owner == bot and token.created_by == boss
    assert AuditEntry.objects.get(action="token.create").detail["owner"] == "ci-bot"
    alice = user_with("operator", "alice")
    page = logged_in(alice).post("/account/tokens/", {"name": "x", "scopes": ["read"], "days": "90", "owner": bot.pk})
    assert ApiToken.objects.filter(name="x", owner=alice).exists()  # no `for` field: her own
    assert not ApiToken.objects.filter(name="x", owner=bot).exists()


def test_a_bad_form_says_why():
    alice = user_with("viewer", "alice")
    page = logged_in(alice).post("/account/tokens/", {"name": "", "scopes": ["root"], "days": "5"})
    assert page.status_code == 400 and not ApiToken.objects.exists()
    token_create(owner=alice, name="ci", scopes=["read"], days=7, by=alice)
    page = logged_in(alice).post("/account/tokens/", {"name": "ci", "scopes": ["read"], "days": "7"})
    assert page.status_code == 400 and "already has a token named" in page.content.decode()


def test_an_expired_token_an_unknown_one_and_a_missing_header_get_401():
    alice = user_with("operator", "alice")
    made = token_create(owner=alice, name="old", scopes=["read"], days=7, by=alice)
    ApiToken.objects.filter(pk=made.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = Api(made.secret).get("/api/runs")
    assert answer.status_code == 401 and answer.json()["message"].startswith("API token 'old' expired on")
    answer = Api("rysh_" + "x" * 43).get("/api/runs")
    assert answer.status_code == 401 and answer.json() == {
        "field": "Authorization",
        "message": "unknown API token",
        "errors": [{"field": "Authorization", "message": "unknown API token"}],
    }
    assert Client().get("/api/runs").status_code == 401


def test_a_session_cookie_does_not_open_the_api():
    """Only the Bearer token authenticates /api/ (so no CSRF is needed there, and a page
    cannot make the browser call the API with a session)."""
    alice = user_with("admin", "alice")
    answer = logged_in(alice).get("/api/runs")
    assert answer.status_code == 401 and answer.json()["field"] == "Authorization"
    assert logged_in(alice, csrf=True).post("/api/runs", {}, content_type="application/json").status_code == 401


def test_a_deactivated_owners_tokens_stop_working():
    alice = user_with("operator", "alice")
    made = token_create(owner=alice, name="ci", scopes=["read"], days=7, by=alice)
    alice.is_active = False
    alice.save()
    assert Api(made.secret).get("/api/runs").json()["message"] == "the owner of API token 'ci' is deactivated"


def test_each_call_notes_the_last_use(api_as):
    api = api_as("viewer", "read")
    assert api.token.last_used_at is None
    api.get("/api/recipes")
    api.token.refresh_from_db()
    assert timezone.now() - api.token.last_used_at < timedelta(seconds=5)
    assert (
        api.token.last_used_at.strftime("%Y-%m-%d %H:%M")
        in logged_in(api.owner).get("/account/tokens/").content.decode()
    )


def test_calls_past_the_rate_limit_get_429_with_retry_after(api_as, settings):
    settings.RYSH_API_RATE_PER_MINUTE = 3
    api, other = api_as("viewer", "read"), api_as("viewer", "read", name="other")
    assert [api.get("/api/approvals").status_code for _ in range(3)] == [200, 200, 200]
    answer = api.get("/api/approvals")
    assert answer.status_code == 429 and 1 <= int(answer["Retry-After"]) <= 60
    assert answer.json()["message"].startswith("rate limit: 3 calls a minute per token; try again in")
    assert other.get("/api/approvals").status_code == 200  # per token


def test_the_rate_window_rolls_over_each_minute(api_as, settings):
    settings.RYSH_API_RATE_PER_MINUTE = 1
    token = api_as("viewer", "read").token
    now = timezone.now().replace(second=30)
    assert rate_take(token=token, now=now) is None
    assert rate_take(token=token, now=now) == 30
    assert rate_take(token=token, now=now + timedelta(minutes=1)) is None
    assert ApiRateWindow.objects.filter(token=token).count() == 1  # the old minute is gone
