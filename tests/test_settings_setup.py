"""The setup proxy's settings (rysh_site/settings_setup.py): strict, and a private address in the
public list is a clear error naming the setting and where a private mirror goes instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from rysh_site.settings_setup import setup_allow_hosts, setup_private_hosts

ROOT = Path(__file__).resolve().parents[1]


def test_it_reads_hosts_wildcards_and_ports(monkeypatch):
    monkeypatch.setenv("RYSH_SETUP_ALLOW_HOSTS", " PyPI.org, files.pythonhosted.org ,*.npmjs.org,proxy.golang.org:443,")
    assert setup_allow_hosts() == ["pypi.org", "files.pythonhosted.org", "*.npmjs.org", "proxy.golang.org:443"]
    monkeypatch.setenv("RYSH_SETUP_ALLOW_PRIVATE_HOSTS", "nexus.corp.example:8443, 10.0.0.7:3141,[fd00::7]:80")
    assert setup_private_hosts() == ["nexus.corp.example:8443", "10.0.0.7:3141", "[fd00::7]:80"]


def test_nothing_is_allowed_by_default(monkeypatch):
    monkeypatch.delenv("RYSH_SETUP_ALLOW_HOSTS", raising=False)
    monkeypatch.delenv("RYSH_SETUP_ALLOW_PRIVATE_HOSTS", raising=False)
    assert setup_allow_hosts() == [] and setup_private_hosts() == []


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("10.0.0.7", "a private address (10.0.0.0/8)"),
        ("192.168.1.20:3141", "a private address (192.168.0.0/16)"),
        ("127.0.0.1:8080", "a loopback address (127.0.0.0/8)"),
        ("169.254.169.254", "a link-local address (cloud metadata lives here) (169.254.0.0/16)"),
        ("[fd00::7]:443", "a private (unique local) address (fc00::/7)"),
        ("localhost:3141", "a loopback name"),
    ],
)
def test_a_private_address_in_the_public_list_stops_start_up(monkeypatch, entry, why):
    monkeypatch.setenv("RYSH_SETUP_ALLOW_HOSTS", f"pypi.org,{entry}")
    with pytest.raises(ImproperlyConfigured) as raised:
        setup_allow_hosts()
    assert str(raised.value) == (
        f"RYSH_SETUP_ALLOW_HOSTS: {entry} is {why}; list a private mirror in RYSH_SETUP_ALLOW_PRIVATE_HOSTS "
        "as host:port instead"
    )


@pytest.mark.parametrize("bad", ["https://pypi.org", "pypi.org/simple", "pypi org", "pypi.org:x"])
def test_a_malformed_entry_stops_start_up(monkeypatch, bad):
    monkeypatch.setenv("RYSH_SETUP_ALLOW_HOSTS", bad)
    with pytest.raises(
        ImproperlyConfigured, match=r"RYSH_SETUP_ALLOW_HOSTS: expected host names, \*.domain or host:port"
    ):
        setup_allow_hosts()


@pytest.mark.parametrize("bad", ["nexus.corp.example", "10.0.0.7", "*.corp.example"])
def test_a_private_mirror_needs_its_port(monkeypatch, bad):
    monkeypatch.setenv("RYSH_SETUP_ALLOW_PRIVATE_HOSTS", bad)
    with pytest.raises(ImproperlyConfigured) as raised:
        setup_private_hosts()
    assert str(raised.value) == f"RYSH_SETUP_ALLOW_PRIVATE_HOSTS: expected host:port (the mirror's port), got {bad!r}"


def test_the_settings_refuse_to_load_with_a_private_address(tmp_path):
    env = {**os.environ, "RYSH_DATA_DIR": str(tmp_path), "RYSH_SETUP_ALLOW_HOSTS": "pypi.org,10.1.2.3"}
    env["DJANGO_SETTINGS_MODULE"] = "rysh_site.settings"
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "rysh: RYSH_SETUP_ALLOW_HOSTS: 10.1.2.3 is a private address "
        "(10.0.0.0/8); list a private mirror in RYSH_SETUP_ALLOW_PRIVATE_HOSTS as host:port instead"
    )
