"""`allowed_domains`: which hosts a recipe's tools may reach (the browser's every request and
hop, http_get's every hop). Pure."""

from __future__ import annotations


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
