"""The client's address behind a proxy: X-Forwarded-For is read only through the proxies an
operator lists (RYSH_TRUSTED_PROXIES), right to left, stopping at the first hop that is not one."""

import ipaddress

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from audit.models import AuditEntry
from rysh_site.env import envnetworks
from rysh_site.proxies import client_address, forwarded_client
from tests.runs.test_view_runs import client_for, user_with

PROXIES = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("2001:db8:1::/48")]


def client(remote: str, forwarded: str = "", trusted=PROXIES) -> str | None:
    found = forwarded_client(remote, forwarded, trusted)
    return str(found) if found is not None else None


@pytest.mark.parametrize(
    "remote, forwarded, expected",
    [
        ("10.0.0.2", "203.0.113.9", "203.0.113.9"),  # one proxy
        ("10.0.0.2", "203.0.113.9, 10.0.0.7", "203.0.113.9"),  # two proxies
        ("10.0.0.2", "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the client's own entry is not read
        ("10.0.0.2", "198.51.100.1,203.0.113.9, 10.1.2.3", "203.0.113.9"),
        ("10.0.0.2", "", "10.0.0.2"),  # a proxy without the header: the proxy
        ("10.0.0.2", "10.0.0.3, 10.0.0.4", "10.0.0.3"),  # nothing but proxies: the farthest
        ("10.0.0.2", "203.0.113.9, not-an-address", "10.0.0.2"),  # garbage from a proxy: the proxy
        ("10.0.0.2", "[2001:db8::9]:443", "2001:db8::9"),
        ("10.0.0.2", "203.0.113.9:51234", "203.0.113.9"),
        ("2001:db8:1::5", "2001:db8::9", "2001:db8::9"),
        ("::ffff:10.0.0.2", "203.0.113.9", "203.0.113.9"),  # IPv4 mapped into IPv6
        ("", "203.0.113.9", None),
    ],
)
def test_it_reads_forwarded_for_only_through_trusted_proxies(remote, forwarded, expected):
    assert client(remote, forwarded) == expected


def test_it_ignores_forwarded_for_from_an_address_that_is_not_a_proxy():
    assert client("198.51.100.7", "203.0.113.9") == "198.51.100.7"
    assert client("10.0.0.2", "203.0.113.9", trusted=[]) == "10.0.0.2"


def test_it_reads_the_request_with_the_settings_list(settings):
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.9")
    settings.RYSH_TRUSTED_PROXIES = []
    assert client_address(request) == "10.0.0.2"
    settings.RYSH_TRUSTED_PROXIES = PROXIES
    assert client_address(request) == "203.0.113.9"


def test_the_setting_takes_addresses_and_networks_and_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("RYSH_TRUSTED_PROXIES", " 10.0.0.5, 192.168.0.0/16,::1 ,")
    assert [str(n) for n in envnetworks("RYSH_TRUSTED_PROXIES")] == ["10.0.0.5/32", "192.168.0.0/16", "::1/128"]
    for bad in ("proxy.local", "10.0.0.5/8", "10.0.0.0/33"):
        monkeypatch.setenv("RYSH_TRUSTED_PROXIES", bad)
        with pytest.raises(ImproperlyConfigured, match="RYSH_TRUSTED_PROXIES"):
            envnetworks("RYSH_TRUSTED_PROXIES")
    monkeypatch.delenv("RYSH_TRUSTED_PROXIES")
    assert envnetworks("RYSH_TRUSTED_PROXIES") == []


@pytest.mark.django_db
def test_the_audit_log_records_the_client_behind_a_trusted_proxy(settings, start):
    settings.RYSH_TRUSTED_PROXIES = PROXIES
    operator = client_for(user_with("operator"))
    recipe = "---\nloop:\n  do:\n    budget:\n      size: 20p\n---\nWork.\n"
    first, second = start(recipe, name="first"), start(recipe, name="second")
    operator.post(f"/runs/{first.pk}/stop/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.9")
    operator.post(f"/runs/{second.pk}/stop/", REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR="203.0.113.9")
    addresses = list(AuditEntry.objects.filter(action="run.stop").order_by("id").values_list("address", flat=True))
    # through the proxy: the client; from an address that is not a proxy, its header is ignored
    assert addresses == ["203.0.113.9", "198.51.100.7"]
