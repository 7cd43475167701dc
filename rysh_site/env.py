"""Strict environment helpers: a malformed value stops start-up with its name, never a guess."""

from __future__ import annotations

import ipaddress
import os
import re

from django.core.exceptions import ImproperlyConfigured

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw not in ("true", "false"):
        raise ImproperlyConfigured(f"{name}: expected true or false, got {raw!r}")
    return raw == "true"


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}: expected a whole number of at least {minimum}, got {value}")
    return value


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise ImproperlyConfigured(f"{name}: expected {' or '.join(choices)}, got {raw!r}")
    return raw


# a host name as DNS writes it (letters, digits, -, _ between dots), lowercase
HOST_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*")
# an admin's entry of a host list: a name, *.domain, an address ([v6] with a port), and :port
HOST_PORT_ENTRY = re.compile(r"((\*\.)?[a-z0-9_-][a-z0-9._-]*|\[[0-9a-f:.]+\]|[0-9a-f:.]+)(:\d{1,5})?")


def envhosts(name: str) -> list[str]:
    """Comma-separated host names or IP addresses, lowercased (`hooks.internal,10.0.0.7`).

    Only names: a scheme, a port, a path, a wildcard or a space stops start-up, since an entry
    that silently matched nothing (or everything) would be worse than none."""
    hosts = []
    for entry in os.environ.get(name, "").split(","):
        host = entry.strip().lower().rstrip(".")
        if not host:
            continue
        bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        try:
            hosts.append(str(ipaddress.ip_address(bare)))
            continue
        except ValueError:
            pass
        if not HOST_NAME.fullmatch(host):
            raise ImproperlyConfigured(
                f"{name}: expected comma-separated host names or IP addresses (no scheme, port, path or "
                f"wildcard; internationalized names in their xn-- form), got {entry.strip()!r}"
            )
        hosts.append(host)
    return hosts


def envnetworks(name: str) -> list[IPNetwork]:
    """Comma-separated addresses or CIDR networks (`10.0.0.5, 192.168.0.0/16, ::1`); an address is
    a network of one. A network with host bits set (`10.0.0.5/8`) is refused: it is either a typo
    or much wider than meant."""
    networks = []
    for entry in (part.strip() for part in os.environ.get(name, "").split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: expected addresses or networks (CIDR), got {entry!r}") from None
    return networks
