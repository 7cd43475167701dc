"""Login throttling (django-axes, rysh_site/throttle.py): 5 failures in 15 minutes lock out the
client address, and the username everywhere but at addresses its owner has logged in from; the
admin's login is throttled the same way; behind a trusted proxy each client is its own address."""

import ipaddress
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import AsyncClient, Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

REFUSED = "Too many failed logins; try again in"
MISMATCH = "didn&#x27;t match"


@pytest.fixture
def users():
    User.objects.create_user("ann", password="right-pass")
    User.objects.create_user("bob", password="bobs-pass")
    User.objects.create_superuser("root", password="root-pass")


def login(username: str, password: str, address: str = "10.0.0.1", path: str = "/login/", **headers):
    client = Client(REMOTE_ADDR=address, **headers)
    return client.post(path, {"username": username, "password": password})


def fail(username: str, times: int, address: str = "10.0.0.1", **headers) -> None:
    """Wrong passwords: the one that reaches the limit is answered with the lockout."""
    for _ in range(times):
        response = login(username, "wrong", address, **headers)
        said = MISMATCH if response.status_code == 200 else REFUSED
        assert response.status_code in (200, 429) and said in response.content.decode()


def refused(response) -> bool:
    return (
        response.status_code == 429
        and REFUSED in response.content.decode()
        and "_auth_user_id" not in response.client.session
    )


def age(minutes: float) -> None:
    """Move every recorded failure back in time (no sleeping)."""
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=minutes))


def test_five_failures_refuse_even_the_right_password(users):
    fail("ann", 5)
    response = login("ann", "right-pass")
    assert refused(response) and f"{REFUSED} 15 minutes" in response.content.decode()
    # from an address ann never logged in from, the username is locked too
    assert refused(login("ann", "right-pass", "10.0.0.2"))


def test_the_fifth_failure_already_says_so(users):
    fail("ann", 4)
    response = login("ann", "wrong")
    assert refused(response) and MISMATCH not in response.content.decode()


def test_the_lockout_does_not_check_the_password(users, monkeypatch):
    fail("ann", 5)
    checked = []
    monkeypatch.setattr(User, "check_password", lambda self, raw: checked.append(raw) or True)
    assert refused(login("ann", "right-pass", "10.0.0.2"))
    assert checked == []


def test_another_user_is_not_affected_by_the_username_key(users):
    fail("ann", 5)
    assert login("bob", "bobs-pass", "10.0.0.2").status_code == 302


def test_the_client_address_is_locked_out_across_usernames(users):
    for name in ("x1", "x2", "x3", "x4", "x5"):
        fail(name, 1, "10.0.0.9")
    assert refused(login("bob", "bobs-pass", "10.0.0.9"))
    assert login("bob", "bobs-pass", "10.0.0.3").status_code == 302


def test_a_success_clears_the_username_counter(users):
    fail("ann", 4)
    assert login("ann", "right-pass", "10.0.0.2").status_code == 302
    fail("ann", 4, "10.0.0.3")
    assert login("ann", "right-pass", "10.0.0.4").status_code == 302


def test_a_success_does_not_clear_the_address_counter_for_other_usernames(users):
    """Else anyone with an account could guess others' passwords forever, logging in as
    themselves between guesses."""
    fail("ann", 4, "10.0.0.9")
    assert login("bob", "bobs-pass", "10.0.0.9").status_code == 302
    fail("ann", 1, "10.0.0.9")
    assert refused(login("bob", "bobs-pass", "10.0.0.9"))


def test_after_the_window_it_works_again(users):
    fail("ann", 5)
    assert refused(login("ann", "right-pass"))
    age(15 + 1 / 60)
    assert login("ann", "right-pass").status_code == 302


def test_the_wait_counts_down_from_the_failure_that_reached_the_limit(users):
    fail("ann", 5)
    age(10)
    assert f"{REFUSED} 5 minutes" in login("ann", "right-pass", "10.0.0.2").content.decode()


def test_hammering_on_a_lock_does_not_extend_it(users):
    fail("ann", 5, "10.0.0.9")
    age(14)
    for _ in range(10):
        assert refused(login("ann", "wrong", "10.0.0.9"))
    assert sum(AccessAttempt.objects.values_list("failures_since_start", flat=True)) == 5
    age(15 + 1 / 60)
    assert login("ann", "right-pass", "10.0.0.2").status_code == 302


def test_the_owner_logs_in_from_a_known_address_while_an_attacker_holds_the_username(users):
    assert login("ann", "right-pass", "10.0.0.5").status_code == 302  # ann's usual address
    for address in ("10.0.0.9", "10.0.0.10"):  # the attacker, renewing the lock from elsewhere
        fail("ann", 5, address)
        assert refused(login("ann", "right-pass", "10.0.0.6"))  # a new address: still locked
        assert login("ann", "right-pass", "10.0.0.5").status_code == 302  # the known one: in


def test_a_known_address_still_counts_its_own_failures(users):
    assert login("ann", "right-pass", "10.0.0.5").status_code == 302
    fail("ann", 5, "10.0.0.5")
    assert refused(login("ann", "right-pass", "10.0.0.5"))


def test_the_settings_are_read_on_each_attempt(users, settings):
    settings.RYSH_LOGIN_MAX_FAILURES = 2
    settings.RYSH_LOGIN_LOCKOUT_MINUTES = 60
    fail("ann", 2)
    assert f"{REFUSED} 60 minutes" in login("ann", "right-pass", "10.0.0.2").content.decode()


# -- the admin's login -------------------------------------------------------------------------------


def test_the_admin_login_is_throttled_too(users):
    for _ in range(5):
        login("root", "wrong", path="/admin/login/?next=/admin/")
    response = login("root", "root-pass", "10.0.0.2", path="/admin/login/?next=/admin/")
    assert refused(response)
    assert 'name="next" value="/admin/"' in response.content.decode()  # the form still leads there


def test_failures_count_across_both_logins(users):
    fail("root", 3, "10.0.0.9")
    for _ in range(2):
        login("root", "wrong", "10.0.0.9", path="/admin/login/")
    assert refused(login("root", "root-pass", "10.0.0.9", path="/admin/login/"))
    assert refused(login("root", "root-pass", "10.0.0.9"))


# -- behind a proxy ----------------------------------------------------------------------------------


@pytest.fixture
def proxy(settings):
    settings.RYSH_TRUSTED_PROXIES = [ipaddress.ip_network("10.0.0.0/24")]
    return "10.0.0.2"


def test_behind_a_trusted_proxy_one_client_does_not_lock_out_the_others(users, proxy):
    for name in ("x1", "x2", "x3", "x4", "x5"):
        fail(name, 1, proxy, HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert refused(login("bob", "bobs-pass", proxy, HTTP_X_FORWARDED_FOR="203.0.113.9"))
    assert login("bob", "bobs-pass", proxy, HTTP_X_FORWARDED_FOR="203.0.113.10").status_code == 302
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.9"}


def test_a_client_cannot_forge_its_way_out_behind_a_proxy(users, proxy):
    for name in ("x1", "x2", "x3", "x4", "x5"):
        fail(name, 1, proxy, HTTP_X_FORWARDED_FOR="203.0.113.9")
    # what the client sends comes first; the proxy appends the address it saw
    forged = login("bob", "bobs-pass", proxy, HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.9")
    assert refused(forged)


def test_without_trusted_proxies_the_header_is_ignored(users):
    for name in ("x1", "x2", "x3", "x4", "x5"):
        fail(name, 1, "10.0.0.9", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert refused(login("bob", "bobs-pass", "10.0.0.9", HTTP_X_FORWARDED_FOR="203.0.113.10"))


@pytest.mark.django_db(transaction=True)
def test_it_refuses_the_same_way_under_asgi():
    """daphne serves the dashboard: axes' middleware takes its async path there."""
    User.objects.create_user("ann", password="right-pass")

    async def go():
        client = AsyncClient(REMOTE_ADDR="10.0.0.1")
        for _ in range(5):
            await client.post("/login/", {"username": "ann", "password": "wrong"})
        response = await client.post("/login/", {"username": "ann", "password": "right-pass"})
        assert response.status_code == 429 and f"{REFUSED} 15 minutes" in response.content.decode()

    async_to_sync(go)()
