"""The setup proxy's settings, read strictly as a part of the settings (docs/configuration.md,
docs/coding-loops.md "The project's own toolchain"): which hosts a coding loop's `setup:`
commands may fetch from.

RYSH_SETUP_ALLOW_HOSTS names public hosts (`pypi.org`, `*.npmjs.org`, `proxy.golang.org:443`);
an address in a private, loopback or link-local range there stops start-up, since the proxy
would refuse it anyway and the admin meant a mirror. A team's private mirror goes in
RYSH_SETUP_ALLOW_PRIVATE_HOSTS, each entry with its port (`nexus.corp.example:8443`,
`10.0.0.7:3141`): as narrow as the browser's private allowance, and never a whole host.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from agents.domains import split_host_port
from rysh_site.egress import refused_because
from rysh_site.env import HOST_PORT_ENTRY

ALLOW = "RYSH_SETUP_ALLOW_HOSTS"
PRIVATE = "RYSH_SETUP_ALLOW_PRIVATE_HOSTS"


def setup_allow_hosts(name: str = ALLOW) -> list[str]:
    """The public hosts setup may fetch from: `host`, `*.domain` or `host:port`, comma-separated."""
    entries = _entries(name)
    for entry in entries:
        host, _port = split_host_port(entry)
        why = _private(host)
        if why:
            raise ImproperlyConfigured(
                f"{name}: {entry} is {why}; list a private mirror in {PRIVATE} as host:port instead"
            )
    return entries


def setup_private_hosts(name: str = PRIVATE) -> list[str]:
    """The private mirrors setup may fetch from, each `host:port`, comma-separated."""
    entries = _entries(name)
    for entry in entries:
        if split_host_port(entry)[1] is None:
            raise ImproperlyConfigured(f"{name}: expected host:port (the mirror's port), got {entry!r}")
    return entries


def _entries(name: str) -> list[str]:
    entries = [e.strip().lower() for e in os.environ.get(name, "").split(",") if e.strip()]
    for entry in entries:
        if not HOST_PORT_ENTRY.fullmatch(entry):
            raise ImproperlyConfigured(f"{name}: expected host names, *.domain or host:port, got {entry!r}")
    return entries


def _private(host: str) -> str | None:
    """Why a listed host can only be private (an address in a refused range, or localhost)."""
    if host == "localhost" or host.endswith(".localhost"):
        return "a loopback name"
    why = refused_because(host)
    return None if why in (None, "not an IP address") else why
