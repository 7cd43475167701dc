"""Where a webhook or Slack POST may go.

- `parse_url()` checks a channel's URL as a whole: http or https, a host that is a host name or
  an IP address, a port from 1 to 65535, no `user:password@` (never sent), no spaces or control
  characters (http.client would refuse them later quoting the URL's path and query). The channel
  form calls it when a URL is saved, and every delivery again, so a URL stored before these
  checks fails its delivery ("bad URL") instead of a page.
- Internal addresses are refused, the same ones as for the model's http_get
  (rysh_site/egress.py's REFUSED_NETWORKS: loopback, private, shared, link-local with the cloud
  metadata address, multicast, reserved; IPv4 inside IPv6 too). Otherwise a channel aimed at
  10.0.0.5:22 would make the delivery log, which operators read, a port scanner of the internal
  network. When a URL is saved, a host written as an address (or `localhost`) is judged without
  asking DNS (`refused_without_dns`); every delivery resolves the host, refuses it when any of
  its addresses is internal, and connects to the very address it checked (`guarded_connector`:
  no second lookup, so no DNS rebinding in between). An admin allows an internal receiver by the
  host name its URL is written with: RYSH_NOTIFY_ALLOW_HOSTS.
- `Deadline`: one clock for a whole attempt (RYSH_NOTIFY_TIMEOUT): the lookup, the connection,
  sending and reading the whole answer all come out of it.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from rysh_site.egress import first_refusal, guarded_connection
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

    @property
    def allowed(self) -> bool:
        """An admin allowed this host to be internal (RYSH_NOTIFY_ALLOW_HOSTS)."""
        return host_key(self.host) in settings.RYSH_NOTIFY_ALLOW_HOSTS


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


class AddressRefused(Exception):
    """The host is, or resolves to, an internal address; the message says which kind."""


def host_key(host: str) -> str:
    """A host as RYSH_NOTIFY_ALLOW_HOSTS writes it: lowercase, no final dot, an IP address in
    its usual form, an internationalized name in its xn-- form."""
    host = host.lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def refused_without_dns(target: Target) -> str | None:
    """Why a URL is refused when it is saved ("a loopback address (127.0.0.0/8)"), or None.

    Only what needs no DNS: a host written as an address (legacy forms like 2130706433 too, as
    the C library reads them) and `localhost`. Names are judged at every delivery, after they
    resolve: what a name resolves to may change after it is saved."""
    if target.allowed:
        return None
    name = host_key(target.host)
    if name == "localhost" or name.endswith(".localhost"):
        return "a loopback address (localhost)"
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):  # a name, not an address
        return None
    found = first_refusal(infos)
    return found[1] if found else None


class Deadline:
    """One clock for a whole attempt. A socket's timeout counts per operation, so a receiver
    that answers a byte every few seconds would hold a worker for hours; at the deadline a timer
    shuts the connection down under whatever read or write waits on it, and `expired` says so.

    Use it as a context manager around the attempt; `watch()` each socket it opens."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._ends = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._watched: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        with self._lock:
            self._forget()

    def left(self) -> float:
        """Seconds left; TimeoutError when there are none."""
        left = self._ends - time.monotonic()
        if left <= 0:
            self.expired = True
            raise TimeoutError("the attempt's deadline passed")
        return left

    def watch(self, sock: socket.socket) -> None:
        # A duplicate of the descriptor, ours to close: shutting it down ends the connection
        # whatever object wraps it by then (TLS replaces the socket object, not the connection).
        with self._lock:
            self._forget()
            self._watched = sock.dup()
            if self.expired:
                self._shutdown()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            self._shutdown()

    def _shutdown(self) -> None:
        if self._watched is not None:
            try:
                self._watched.shutdown(socket.SHUT_RDWR)
            except OSError:  # not connected yet, or already closed by the other side
                pass

    def _forget(self) -> None:
        if self._watched is not None:
            self._watched.close()
            self._watched = None


def resolve(host: str, port: int, deadline: Deadline) -> list:
    """getaddrinfo within the deadline. The C resolver cannot be interrupted, so it runs in a
    helper thread that is left to finish on its own when the deadline passes first."""
    found: list = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            found.append(exc)

    thread = threading.Thread(target=lookup, name=f"notify-resolve-{host}", daemon=True)
    thread.start()
    thread.join(deadline.left())
    if not found:
        deadline.expired = True
        raise TimeoutError(f"{host} was not resolved in time")
    if isinstance(found[0], Exception):
        raise found[0]
    return found[0]


def guarded_connector(target: Target, deadline: Deadline):
    """socket.create_connection for http.client: resolve once, refuse (AddressRefused) when any
    address is internal and the host is not allowed, then connect to an address that was
    checked, all within the deadline (http.client's own timeout is not used): the one guarded
    connection of rysh_site/egress.py."""

    def prepare(sock: socket.socket) -> None:
        sock.settimeout(deadline.left())
        deadline.watch(sock)

    return guarded_connection(
        refusal=lambda host, address, why: AddressRefused(why),
        resolve=lambda host, port: resolve(host, port, deadline),
        prepare=prepare,
        check=not target.allowed,
    )
