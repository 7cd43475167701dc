"""The one guarded network connection (docs/security.md): resolve a host once, refuse when any
of its addresses is private or internal (unless the caller allows the host), then connect to an
address that was checked — no room for DNS rebinding — within the caller's timeout or deadline.

Used by http_get (agents/task_tools.py), notification deliveries (notify/transport.py) and the
browser's and a coding setup's egress proxies (agents/egress.py, agents/egress_proxy.py).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence

# Where no guarded connection goes (SSRF): the host is resolved and refused when any of its
# addresses falls in one of these. Tests may pass a shorter list; the product uses this one.
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
REFUSED_NETWORKS: tuple[tuple[Network, str], ...] = tuple(
    (ipaddress.ip_network(net), why)
    for net, why in (
        ("0.0.0.0/8", "an unspecified address"),
        ("127.0.0.0/8", "a loopback address"),
        ("10.0.0.0/8", "a private address"),
        ("172.16.0.0/12", "a private address"),
        ("192.168.0.0/16", "a private address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
        ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),
        ("192.0.0.0/24", "an IETF protocol assignment address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved or broadcast address"),
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "an IPv4-compatible address (deprecated)"),
        ("::ffff:0:0:0/96", "an IPv4-translated (SIIT) address"),
        ("100::/64", "a discard-only address"),
        ("64:ff9b::/96", "a NAT64 address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("2001::/32", "a Teredo address"),
        ("fc00::/7", "a private (unique local) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address (deprecated)"),
        ("ff00::/8", "a multicast address"),
    )
)


class AddressRefused(Exception):
    """A host resolved to an address the guard refuses."""


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")


def carried_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: mapped (::ffff:a.b.c.d), 6to4, Teredo (its
    server and its client), NAT64 (64:ff9b::a.b.c.d), SIIT (::ffff:0:a.b.c.d) and
    IPv4-compatible (::a.b.c.d)."""
    carried = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if ip in _NAT64 or ip in _SIIT or (ip in _IPV4_COMPATIBLE and int(ip) > 1):  # ::1 and :: are themselves
        carried.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [inner for inner in carried if inner is not None]


def refused_because(address: str, refused: Sequence[tuple[Network, str]] = REFUSED_NETWORKS) -> str | None:
    """Why the guard refuses this IP address (e.g. "a private address (10.0.0.0/8)"), or None.

    IPv4 inside IPv6 (::ffff:10.0.0.1, 6to4 2002:a00:1::, Teredo, NAT64 64:ff9b::a00:1,
    ::10.0.0.1) is judged as the IPv4 it carries first, so the reason names what it reaches.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates = [*carried_ipv4(ip), ip]
    for candidate in candidates:
        for network, why in refused:
            if candidate.version == network.version and candidate in network:
                return f"{why} ({network})"
    return None


def first_refusal(infos: list, refused: Sequence[tuple[Network, str]] = REFUSED_NETWORKS) -> tuple[str, str] | None:
    """(address, why) of the first resolved address (getaddrinfo's answer) the guard refuses."""
    for *_ignored, sockaddr in infos:
        if why := refused_because(str(sockaddr[0]), refused):
            return str(sockaddr[0]), why
    return None


def connect_checked(infos: list, *, host: str, prepare: Callable[[socket.socket], None]) -> socket.socket:
    """A connection to the first of the checked addresses that answers; `prepare` sets each
    socket's timeout (and may bind it) before it connects. The last OSError when none answers."""
    error: OSError | None = None
    for family, kind, proto, _name, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            prepare(sock)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
    raise error or OSError(f"{host} resolves to no address")


Refusal = Callable[[str, str, str], Exception]  # (host, address, why) -> what to raise


def guarded_connection(
    *,
    refusal: Refusal,
    refused: Sequence[tuple[Network, str]] = REFUSED_NETWORKS,
    resolve: Callable[[str, int], list] | None = None,
    prepare: Callable[[socket.socket], None] | None = None,
    check: bool = True,
):
    """socket.create_connection (for http.client) that resolves once, refuses (raising what
    `refusal` makes) when `check` and any address is refused, then connects to what it checked.
    `resolve` defaults to getaddrinfo; `prepare` to the timeout and source address asked for."""

    def create_connection(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None, **_):
        host, port = address
        infos = resolve(host, port) if resolve else socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        if check and (found := first_refusal(infos, refused)):
            raise refusal(host, *found)

        def asked(sock: socket.socket) -> None:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)

        return connect_checked(infos, host=host, prepare=prepare or asked)

    return create_connection
