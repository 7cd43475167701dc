"""Where a webhook or Slack POST may go.

`parse_url()` checks a channel's URL as a whole: http or https, a host that is a host name or
an IP address, a port from 1 to 65535, no `user:password@` (never sent), no spaces or control
characters (http.client would refuse them later quoting the URL's path and query). The channel
form calls it when a URL is saved, and every delivery again, so a URL stored before these checks
fails its delivery ("bad URL") instead of a page.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from rysh_site.env import HOST_NAME


class BadURL(ValueError):
    """The message says what is wrong and never quotes the URL's path, query or user part."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as urlsplit gives it: lowercase, an IPv6 address without its brackets
    port: int
    path: str  # the request line's: path and query

    @property
    def where(self) -> str:
        """`host:port`, what errors name (the path and query may hold the receiver's secret)."""
        return f"{self._bracketed}:{self.port}"

    @property
    def netloc(self) -> str:
        """The host, and the port unless it is the scheme's own."""
        default = 443 if self.scheme == "https" else 80
        return self._bracketed if self.port == default else self.where

    @property
    def _bracketed(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_url(url: str) -> Target:
    if any(ch.isspace() or unicodedata.category(ch) == "Cc" for ch in url):
        raise BadURL("the URL must not contain spaces or control characters (write a space as %20)")
    try:
        parts = urlsplit(url)
    except ValueError:  # urlsplit's own check of an [IPv6] host
        raise BadURL("the URL's host is not a host name or an IP address") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadURL("the URL must start with http:// or https:// and name a host")
    if "@" in parts.netloc:
        raise BadURL("the URL must not carry user:password@ (it is not sent; put a token in the path or query)")
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number
        port = 0
    if port == 0:
        raise BadURL("the URL's port must be a number from 1 to 65535")
    if not _host_ok(parts.hostname):
        raise BadURL(f"{parts.hostname!r} is not a host name or an IP address")
    if not (parts.path + parts.query).isascii():
        raise BadURL("the URL's path and query must be ASCII (percent-encode other characters)")
    return Target(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port or (443 if parts.scheme == "https" else 80),
        path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
    )


def _host_ok(host: str) -> bool:
    if ":" in host:  # only an IPv6 address has one (urlsplit checked the brackets)
        return True
    try:
        name = host.encode("idna").decode("ascii")  # an internationalized name in its xn-- form
    except UnicodeError:
        return False
    return bool(HOST_NAME.fullmatch(name.rstrip(".")))
