"""`allowed_domains`: which hosts a recipe's tools may reach (the browser's every request and
hop, http_get's every hop); the private hosts an admin lets the browser reach anyway
(RYSH_BROWSER_ALLOW_PRIVATE_HOSTS); the hosts a coding loop's setup may fetch from
(RYSH_SETUP_ALLOW_HOSTS). Pure."""

from __future__ import annotations

import ipaddress
import re
import socket

# WHATWG: a host whose last label is a number is an IPv4 address, in any of its spellings
# (2130706433, 0x7f000001, 0177.0.0.1, 127.1); Chromium opens them all as 127.0.0.1.
_IPV4ISH = re.compile(r"[0-9a-fx.]+\Z")
_NUMBER = re.compile(r"(0x[0-9a-f]*|[0-9]+)\Z")


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """`example.com` allows exactly that host; `*.example.com` any host below it."""
    host = (host or "").lower().rstrip(".")
    for pattern in allowed:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def canonical_host(host: str) -> str:
    """A URL's host as the browser connects to it: lowercase, no trailing dot or brackets, and
    an IP address in its one normal form whatever its spelling (decimal, hex, octal, short)."""
    host = (host or "").strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.removesuffix(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if _IPV4ISH.match(host) and _NUMBER.match(host.rsplit(".", 1)[-1]):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return host  # not an address the browser would open either
    return host


def split_host_port(entry: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address, as (host, port or None);
    ValueError when it is none of these."""
    entry = entry.strip().lower()
    port: str | None = None
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError(f"{entry!r}: expected [address]:port")
        port = rest[1:] if rest else None
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    else:
        host = entry
    if not host or (port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(f"{entry!r}: expected a host, *.domain or host:port")
    return (host if host.startswith("*.") else canonical_host(host)), (int(port) if port is not None else None)


def private_host_allowed(host: str, port: int, allowed: tuple[str, ...]) -> bool:
    """Whether an admin lets the browser reach this host although its addresses are private:
    an entry names the host (`intranet.example`, `*.corp.example`, `10.0.0.7`), on any port or
    on the one it gives (`127.0.0.1:8000`). The host is matched as named, never by address."""
    return host_port_listed(host, port, allowed)


def host_port_listed(host: str, port: int, entries: tuple[str, ...]) -> bool:
    """Whether an entry of an admin's list (`host`, `*.domain`, `host:port`, `[v6]:port`) names
    this host, on any port or on this one."""
    host = canonical_host(host)
    for entry in entries:
        pattern, only_port = split_host_port(entry)
        if host_allowed(host, (pattern,)) and only_port in (None, port):
            return True
    return False
