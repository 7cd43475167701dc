"""Login throttling: 5 failures in 15 minutes lock the username and the client address out."""

import time

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from rysh_site import throttle

pytestmark = pytest.mark.django_db

REFUSED = "Too many failed logins; try again in"


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def users():
    User.objects.create_user("ann", password="right-pass")
    User.objects.create_user("bob", password="bobs-pass")


def login(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(reverse("login"), {"username": username, "password": password})


def fail(username: str, times: int, address: str = "10.0.0.1") -> None:
    for _ in range(times):
        response = login(username, "wrong", address)
        assert response.status_code == 200 and "didn&#x27;t match" in response.content.decode()


def test_five_failures_refuse_even_the_right_password(users):
    fail("ann", 5)
    response = login("ann", "right-pass")
    assert response.status_code == 200 and "_auth_user_id" not in response.client.session
    assert f"{REFUSED} 15 minutes" in response.content.decode()
    # from another address too: the username is locked, whatever the address
    assert REFUSED in login("ann", "right-pass", "10.0.0.2").content.decode()


def test_the_lockout_does_not_check_the_password(users, monkeypatch):
    fail("ann", 5)
    checked = []
    monkeypatch.setattr(User, "check_password", lambda self, raw: checked.append(raw) or True)
    assert REFUSED in login("ann", "right-pass", "10.0.0.2").content.decode()
    assert checked == []


def test_another_user_is_not_affected_by_the_username_key(users):
    fail("ann", 5)
    response = login("bob", "bobs-pass", "10.0.0.2")
    assert response.status_code == 302


def test_the_client_address_is_locked_out_across_usernames(users):
    for name in ("x1", "x2", "x3", "x4", "x5"):
        fail(name, 1, "10.0.0.9")
    assert REFUSED in login("bob", "bobs-pass", "10.0.0.9").content.decode()
    assert login("bob", "bobs-pass", "10.0.0.3").status_code == 302


def test_a_success_clears_the_username_counter(users):
    fail("ann", 4)
    assert login("ann", "right-pass", "10.0.0.2").status_code == 302
    fail("ann", 4, "10.0.0.3")
    assert login("ann", "right-pass", "10.0.0.4").status_code == 302


def test_after_the_window_it_works_again(users):
    fail("ann", 5)
    assert REFUSED in login("ann", "right-pass").content.decode()
    # age the recorded failures past the 15-minute window (no sleeping)
    for key in (throttle.user_key("ann"), throttle.ip_key("10.0.0.1")):
        cache.set(key, [t - 15 * 60 - 1 for t in cache.get(key)])
    assert login("ann", "right-pass").status_code == 302


def test_the_wait_counts_down_from_the_oldest_counted_failure(users):
    fail("ann", 5)
    key = throttle.user_key("ann")
    cache.set(key, [time.time() - 10 * 60] * 5)
    assert f"{REFUSED} 5 minutes" in login("ann", "right-pass", "10.0.0.2").content.decode()
