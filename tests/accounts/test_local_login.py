"""RYSH_LOCAL_LOGIN=false: passwords only for RYSH_BREAK_GLASS_USERS, at /login/ and the admin's
/admin/login/ alike; everyone else logs in with the company login, and their password sessions
from before end."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEntry
from tests.accounts.conftest import OIDC_BACKEND

pytestmark = pytest.mark.django_db
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


@pytest.fixture
def passwords_off(settings, oidc):
    settings.RYSH_LOCAL_LOGIN = False
    settings.RYSH_BREAK_GLASS_USERS = ["root"]
    settings.AUTHENTICATION_BACKENDS = [
        "accounts.backends.BreakGlassBackend" if b == MODEL_BACKEND else b for b in settings.AUTHENTICATION_BACKENDS
    ]
    assert OIDC_BACKEND in settings.AUTHENTICATION_BACKENDS
    User.objects.create_superuser("root", password="root-pass")
    User.objects.create_superuser("ann", password="ann-pass")


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_a_password_login_is_refused_but_for_the_break_glass_admin(passwords_off):
    ann = Client()
    response = ann.post("/login/", {"username": "ann", "password": "ann-pass"})
    assert response.status_code == 200 and not logged_in(ann)
    assert "Password logins are turned off here" in response.content.decode()
    assert AuditEntry.objects.filter(action="auth.login_failed", detail__username="ann").exists()
    root = Client()
    assert root.post("/login/", {"username": "root", "password": "root-pass"}).status_code == 302
    assert logged_in(root) and root.get("/").status_code == 200


def test_the_admin_login_is_refused_the_same_way(passwords_off):
    ann = Client()
    ann.post("/admin/login/", {"username": "ann", "password": "ann-pass", "next": "/admin/"})
    assert not logged_in(ann)
    root = Client()
    root.post("/admin/login/", {"username": "root", "password": "root-pass", "next": "/admin/"})
    assert logged_in(root) and root.get("/admin/").status_code == 200


def test_password_sessions_from_before_end(passwords_off):
    ann = Client()
    ann.force_login(User.objects.get(username="ann"), backend=MODEL_BACKEND)  # logged in while passwords were on
    assert ann.get("/").status_code == 302


def test_the_login_page_says_so_and_offers_the_company_login(passwords_off):
    page = Client().get("/login/").content.decode()
    assert "Log in with Test IdP" in page and "Password logins are turned off here" in page


def test_passwords_stay_on_by_default(settings, oidc):
    assert settings.RYSH_LOCAL_LOGIN is True and MODEL_BACKEND in settings.AUTHENTICATION_BACKENDS
    User.objects.create_user("ann", password="ann-pass")
    client = Client()
    client.post("/login/", {"username": "ann", "password": "ann-pass"})
    assert logged_in(client)
