"""The client's address, as the login throttle and the audit log see it.

REMOTE_ADDR is the address that connected. Behind the TLS proxy of docs/security.md that is the proxy, the
same for every person, so the address is read from X-Forwarded-For — but only when the
connection comes from a proxy the operator listed (RYSH_TRUSTED_PROXIES), and only as far back
as the chain of listed proxies goes: each proxy appends the address it was connected from, so
the right-most address that is not a listed proxy is the last one a trusted hop vouches for.
Everything left of it was written by the client and is never read. With no list (the default)
the header is ignored entirely.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from django.conf import settings

from rysh_site.env import IPNetwork

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def client_address(request) -> str | None:
    """The client's address in normal form, or None when the connection has none we can read."""
    address = forwarded_client(
        request.META.get("REMOTE_ADDR") or "",
        request.META.get("HTTP_X_FORWARDED_FOR") or "",  # several headers arrive joined with ", "
        settings.RYSH_TRUSTED_PROXIES,
    )
    return str(address) if address is not None else None


def forwarded_client(remote_addr: str, forwarded_for: str, trusted: Sequence[IPNetwork]) -> IPAddress | None:
    """Walk from the connection leftwards through X-Forwarded-For while each hop is a trusted
    proxy; the first hop that is not one is the client. A malformed entry ends the walk at the
    trusted proxy that wrote it (we cannot say more than that hop can)."""
    hop = parse_address(remote_addr)
    if hop is None or not _trusted(hop, trusted):
        return hop
    for entry in reversed(forwarded_for.split(",")):
        earlier = parse_address(entry)
        if earlier is None:
            return hop
        hop = earlier
        if not _trusted(hop, trusted):
            return hop
    return hop  # every hop is a proxy: the farthest one is all we know


def parse_address(raw: str) -> IPAddress | None:
    """An address as proxies write it: `203.0.113.9`, `2001:db8::1`, `[2001:db8::1]:443` or
    `203.0.113.9:51234`; an IPv4 address mapped into IPv6 is the IPv4 address."""
    text = raw.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:
        text = text.split(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: IPAddress, trusted: Sequence[IPNetwork]) -> bool:
    return any(address.version == network.version and address in network for network in trusted)
