"""Company login end to end against a real OpenID Connect provider on loopback
(tests/accounts/oidc_provider.py): the browser's part is Django's test client (to the provider,
back with a code and the state), the provider's a real authorization, token, JWKS and userinfo
exchange. Roles come from the groups claim through RYSH_OIDC_ROLE_MAP at every login."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from accounts.models import OIDCIdentity
from audit.models import AuditEntry
from rysh_site.roles import roles_of
from tests.accounts.conftest import company_login_on
from tests.accounts.oidc_provider import running_provider
from tests.e2e.stack import free_port

pytestmark = pytest.mark.django_db


def company_login(client: Client, provider, sub: str, *, authorize=None, callback=None):
    """Log in as `sub`: /oidc/authenticate/ sends the browser to the provider, the person
    authorizes, the provider sends them back with a code and the state. `authorize` and
    `callback` may change the URLs on the way (what an attacker or a stale tab would send)."""
    start = client.get("/oidc/authenticate/", {"next": "/"})
    assert start.status_code == 302, start.content
    to_provider = start["Location"]
    back = provider.authorize(authorize(to_provider) if authorize else to_provider, sub)
    back = callback(back) if callback else back
    parts = urlsplit(back)
    assert parts.path == "/oidc/callback/"
    return client.get(parts.path, dict(parse_qsl(parts.query)))


def with_query(url: str, **changes) -> str:
    parts = urlsplit(url)
    query = {**dict(parse_qsl(parts.query)), **changes}
    return parts._replace(query=urlencode(query)).geturl()


def alice(provider, **claims) -> None:
    provider.set_user(
        "alice-sub", **{"preferred_username": "alice", "email": "alice@example.com", "groups": ["rysh-ops"], **claims}
    )


def logged_in_as(client: Client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id).username if user_id else None


def refused(response, reason: str) -> None:
    assert response.status_code == 403
    assert "Company login refused" in response.content.decode()
    row = AuditEntry.objects.filter(action="auth.login_failed").latest("id")
    assert row.detail["via"] == "oidc" and reason in row.detail["reason"], row.detail
    assert row.actor_name.startswith("oidc:localhost")


def test_it_logs_a_person_in_with_the_roles_their_groups_map_to(oidc):
    alice(oidc, groups=["rysh-admins", "rysh-ops", "marketing"])
    client = Client()
    response = company_login(client, oidc, "alice-sub")
    assert response.status_code == 302 and response["Location"] == "/"
    assert logged_in_as(client) == "alice"
    user = User.objects.get(username="alice")
    assert roles_of(user) == {"admin", "operator"}
    assert user.email == "alice@example.com" and not user.has_usable_password()
    identity = OIDCIdentity.objects.get(user=user)
    assert (identity.issuer, identity.subject) == (oidc.url, "alice-sub")
    assert identity.last_groups == ["rysh-admins", "rysh-ops", "marketing"]
    login = AuditEntry.objects.get(action="auth.login")
    assert login.actor == user and login.detail == {"via": "oidc"}
    added = AuditEntry.objects.get(action="role.add")
    assert added.detail == {"groups": ["admin", "operator"]} and added.actor_name == f"oidc:{urlsplit(oidc.url).netloc}"
    assert client.get("/").status_code == 200


def test_the_login_page_offers_the_company_login(oidc):
    page = Client().get("/login/", {"next": "/history/"}).content.decode()
    assert "Log in with Test IdP" in page and 'href="/oidc/authenticate/?next=/history/"' in page
    assert 'name="password"' in page  # passwords stay on (RYSH_LOCAL_LOGIN)


def test_a_role_removed_at_the_provider_is_gone_at_the_next_login(oidc, monkeypatch):
    alice(oidc, groups=["rysh-admins", "rysh-ops"])
    first = Client()
    company_login(first, oidc, "alice-sub")
    user = User.objects.get(username="alice")
    user.groups.add(Group.objects.get(name="editor"))  # by hand in the admin: not the provider's to take
    pushed = []
    monkeypatch.setattr("runs.receivers.push_users_changed", lambda ids: pushed.append(set(ids or ())))

    alice(oidc, groups=["rysh-ops"])  # removed from rysh-admins at the provider
    second = Client()
    company_login(second, oidc, "alice-sub")

    assert logged_in_as(second) == "alice"
    assert roles_of(User.objects.get(pk=user.pk)) == {"operator", "editor"}
    removed = AuditEntry.objects.filter(action="role.remove").get()
    assert removed.detail == {"groups": ["admin"]} and removed.target_id == str(user.pk)
    # the person's open sockets are told to check their roles again (runs/receivers.py), and the
    # session they opened as an admin ends: its pages go to the login page, its sockets close
    assert {user.pk} in pushed
    assert logged_in_as(first) is None
    assert first.get("/")["Location"].startswith("/login/")
    assert logged_in_as(second) == "alice"


def test_a_login_that_takes_no_role_away_leaves_the_person_s_other_sessions(oidc):
    alice(oidc, groups=["rysh-ops"])
    first, second = Client(), Client()
    company_login(first, oidc, "alice-sub")
    alice(oidc, groups=["rysh-ops", "rysh-admins"])  # a role given, none taken
    company_login(second, oidc, "alice-sub")
    assert logged_in_as(first) == logged_in_as(second) == "alice"


def test_the_same_login_again_changes_no_role(oidc):
    alice(oidc, groups=["rysh-ops"])
    company_login(Client(), oidc, "alice-sub")
    company_login(Client(), oidc, "alice-sub")
    assert AuditEntry.objects.filter(action__startswith="role.").count() == 1
    assert AuditEntry.objects.filter(action="auth.login").count() == 2


def test_a_wrong_state_is_refused(oidc):
    alice(oidc)
    client = Client()
    response = company_login(client, oidc, "alice-sub", callback=lambda url: with_query(url, state="forged"))
    refused(response, "state")
    assert logged_in_as(client) is None
    assert not User.objects.filter(username="alice").exists()


def test_a_callback_without_a_login_started_in_this_browser_is_refused(oidc):
    alice(oidc)
    other = Client()
    company_login_url = {}

    def elsewhere(url: str) -> str:
        company_login_url["back"] = url
        return url

    company_login(Client(), oidc, "alice-sub", callback=elsewhere)
    parts = urlsplit(company_login_url["back"])
    response = other.get(parts.path, dict(parse_qsl(parts.query)))  # a link made in another browser
    refused(response, "no login was started")
    assert logged_in_as(other) is None


def test_a_token_for_another_client_is_refused(oidc):
    """The provider signs an ID token whose audience is another client (a code issued to
    another application): the library checks only the signature; we check the audience."""
    alice(oidc)
    oidc.token_for = "other-app"
    client = Client()
    response = company_login(client, oidc, "alice-sub", authorize=lambda url: with_query(url, client_id="other-app"))
    refused(response, "for another client, not rysh")
    assert logged_in_as(client) is None


def test_an_expired_token_is_refused_not_a_500(settings):
    with running_provider(token_max_age=timedelta(hours=-1)) as stale:
        company_login_on(settings, stale)
        alice(stale)
        client = Client()
        response = company_login(client, stale, "alice-sub")
    refused(response, "expired")
    assert logged_in_as(client) is None


def test_a_missing_groups_claim_gives_no_mapped_role_and_says_so(oidc):
    alice(oidc, groups=["rysh-admins"])
    company_login(Client(), oidc, "alice-sub")
    oidc.set_user("alice-sub", preferred_username="alice", email="alice@example.com")  # no groups claim
    client = Client()
    company_login(client, oidc, "alice-sub")
    user = User.objects.get(username="alice")
    assert logged_in_as(client) == "alice"
    assert roles_of(user) == {"viewer"}  # what anyone without a role has: read only
    missing = AuditEntry.objects.get(action="auth.groups_missing")
    assert missing.detail == {"claim": "groups", "removed": ["admin"]}
    assert OIDCIdentity.objects.get(user=user).last_groups is None


def test_the_groups_claim_name_is_a_setting(oidc, settings):
    settings.RYSH_OIDC_GROUPS_CLAIM = "roles"
    alice(oidc, groups=[], roles=["rysh-admins"])
    company_login(Client(), oidc, "alice-sub")
    assert roles_of(User.objects.get(username="alice")) == {"admin"}


def test_a_local_account_of_the_same_name_is_not_taken_over(oidc):
    User.objects.create_superuser("root", password="root-pass")
    oidc.set_user("mallory-sub", preferred_username="root", email="root@example.com", groups=[])
    client = Client()
    response = company_login(client, oidc, "mallory-sub")
    refused(response, "an account named root exists and is not linked")
    row = AuditEntry.objects.filter(action="auth.login_failed").latest("id")
    assert row.detail["subject"] == "mallory-sub" and row.target_label.endswith("root")
    assert logged_in_as(client) is None


def test_a_linked_local_account_logs_in_through_the_provider(oidc):
    bob = User.objects.create_user("bob", password="bobs-pass")
    OIDCIdentity.objects.create(user=bob, issuer=oidc.url, subject="bob-sub")  # an admin linked it
    oidc.set_user("bob-sub", preferred_username="robert", email="bob@example.com", groups=["rysh-ops"])
    client = Client()
    company_login(client, oidc, "bob-sub")
    assert logged_in_as(client) == "bob" and roles_of(bob) == {"operator"}


def test_a_deactivated_account_is_refused_and_its_session_ends(oidc):
    alice(oidc)
    client = Client()
    company_login(client, oidc, "alice-sub")
    User.objects.filter(username="alice").update(is_active=False)
    assert client.get("/").status_code == 302  # the session's user is gone: to the login page
    refused(company_login(Client(), oidc, "alice-sub"), "deactivated")


def test_a_person_without_the_username_claim_is_refused(oidc):
    oidc.set_user("nameless-sub", email="x@example.com", groups=["rysh-ops"])
    refused(company_login(Client(), oidc, "nameless-sub"), "no preferred_username claim")


def test_a_provider_that_stops_answering_mid_login_is_a_refused_login(settings):
    with running_provider() as gone:
        company_login_on(settings, gone)
        alice(gone)
        client = Client()
        start = client.get("/oidc/authenticate/")
        back = gone.authorize(start["Location"], "alice-sub")
    parts = urlsplit(back)  # the provider is down now: the token exchange cannot happen
    refused(client.get(parts.path, dict(parse_qsl(parts.query))), "did not answer")


def test_the_provider_saying_no_is_a_refused_login(oidc):
    client = Client()
    start = client.get("/oidc/authenticate/")
    state = dict(parse_qsl(urlsplit(start["Location"]).query))["state"]
    response = client.get(
        "/oidc/callback/", {"error": "access_denied", "state": state, "error_description": "Call +1 555"}
    )
    refused(response, "the provider said access_denied")
    assert "555" not in response.content.decode()  # a description in a link anyone can make is not repeated


def test_password_credentials_never_reach_the_company_login_backend(oidc, monkeypatch):
    called = []
    monkeypatch.setattr("accounts.backends.OIDCBackend.get_token", lambda self, payload: called.append(payload))
    User.objects.create_user("ann", password="right-pass")
    client = Client()
    response = client.post("/login/?code=x&state=y", {"username": "ann", "password": "right-pass"})
    assert response.status_code == 302 and logged_in_as(client) == "ann" and called == []


def test_with_company_login_off_nothing_of_it_shows(settings):
    assert settings.RYSH_OIDC_ISSUER == ""
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert Client().get("/oidc/callback/", {"code": "x", "state": "y"}).status_code == 404
    page = Client().get("/login/").content.decode()
    assert "Log in with" not in page and 'name="password"' in page


def test_an_address_the_login_throttle_locked_is_refused_here_too(oidc):
    User.objects.create_user("ann", password="right-pass")
    for _ in range(5):
        Client(REMOTE_ADDR="10.0.0.9").post("/login/", {"username": "ann", "password": "wrong"})
    alice(oidc)
    client = Client(REMOTE_ADDR="10.0.0.9")
    response = company_login(client, oidc, "alice-sub")
    assert response.status_code == 429 and "Too many failed logins; try again in" in response.content.decode()
    row = AuditEntry.objects.filter(action="auth.login_failed").latest("id")
    assert row.detail["via"] == "oidc" and "too many failed logins" in row.detail["reason"]
    assert logged_in_as(client) is None


def test_password_logins_and_sessions_never_ask_the_provider(settings, monkeypatch):
    """Django makes every backend for each password login and each session's user: the company
    login's must not reach for the provider then."""
    company_login_on(settings, SimpleNamespace(url=f"http://127.0.0.1:{free_port()}"))  # nothing listens
    monkeypatch.setattr("requests.get", lambda *a, **k: pytest.fail("the provider was asked"))
    User.objects.create_user("ann", password="right-pass")
    client = Client()
    assert client.post("/login/", {"username": "ann", "password": "right-pass"}).status_code == 302
    assert client.get("/").status_code == 200
