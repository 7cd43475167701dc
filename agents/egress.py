"""The browser's one way out: a SOCKS5 proxy on loopback that Chromium must use for every
connection — navigations, redirect hops, frames, sub-resources, websockets, loopback included —
so that http_get's guard holds for all of them, whatever `allowed_domains` says and whatever a
page does.

Chromium hands the proxy each host as it canonicalised it (2130706433, 0x7f000001 and 127.1 all
arrive as 127.0.0.1). The proxy refuses a host outside the recipe's `allowed_domains`; resolves
a name once and refuses it when any of its addresses is loopback, private, link-local… (the
networks of rysh_site/egress.py REFUSED_NETWORKS), unless an admin named that host
(RYSH_BROWSER_ALLOW_PRIVATE_HOSTS, with this dashboard's own host:port); and connects to the
very addresses it checked, so DNS rebinding gains nothing. Nothing else leaves: the browser's
own resolver knows no host, and WebRTC may not use UDP outside a proxy.

The proxy serves only the worker's own user. Chromium cannot authenticate to a SOCKS proxy
(no username or password, no UNIX socket), so the proxy asks the kernel instead: the other end
of each loopback connection is looked up in /proc/net/tcp, which names the user that owns it,
and a connection of any other user is refused at the handshake ("no acceptable method").
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agents.domains import canonical_host, host_allowed, private_host_allowed
from rysh_site.egress import REFUSED_NETWORKS, connect_checked, first_refusal, refused_because

log = logging.getLogger(__name__)

PROXY_HOST = "127.0.0.1"
CONNECT_TIMEOUT = 10
HANDSHAKE_TIMEOUT = 10
CHUNK = 64 * 1024
ALLOW_SETTING = "RYSH_BROWSER_ALLOW_PRIVATE_HOSTS"
# SOCKS5 (RFC 1928) replies
SUCCEEDED, NOT_ALLOWED, HOST_UNREACHABLE, REFUSED_BY_HOST = 0x00, 0x02, 0x04, 0x05
COMMAND_NOT_SUPPORTED, ADDRESS_NOT_SUPPORTED = 0x07, 0x08
NO_ACCEPTABLE_METHOD = 0xFF
SOCKET_TABLES = {socket.AF_INET: "/proc/net/tcp", socket.AF_INET6: "/proc/net/tcp6"}

Resolve = Callable[..., list]


@dataclass(frozen=True)
class Verdict:
    """What the proxy decided for one host and port: `why` it refuses (None: go) and which
    rule said so — `private` (the guard: reported to the model), `domains` (allowed_domains:
    the browser's listeners report those) or `unresolved` — else the addresses to connect to."""

    why: str | None = None
    rule: str = ""
    infos: list = field(default_factory=list)

    @property
    def reply(self) -> int:
        return HOST_UNREACHABLE if self.rule == "unresolved" else NOT_ALLOWED


def judge(
    host: str,
    port: int,
    *,
    allowed_domains: tuple[str, ...] = (),
    private_hosts: tuple[str, ...] = (),
    refused: Sequence = REFUSED_NETWORKS,
    resolve: Resolve = socket.getaddrinfo,
) -> Verdict:
    """Whether the browser may connect to host:port, and the addresses to connect to."""
    host = canonical_host(host)
    if allowed_domains and not host_allowed(host, allowed_domains):
        return Verdict(f"{host} is outside this recipe's allowed_domains ({', '.join(allowed_domains)})", "domains")
    try:
        infos = resolve(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return Verdict(f"{host} does not resolve ({exc})", "unresolved")
    if private_host_allowed(host, port, private_hosts):
        return Verdict(infos=infos)
    if found := first_refusal(infos, refused):
        address, why = found
        resolved = "" if host == address else f" (it resolves to {address})"
        return Verdict(f"{host_port(host, port)}{resolved} is {why}", "private")
    return Verdict(infos=infos)


def literal_refusal(url: str, private_hosts: tuple[str, ...], refused: Sequence = REFUSED_NETWORKS) -> str | None:
    """Why a URL whose host is an IP address, in any spelling, is refused before the browser
    is asked to open it (names are left to the proxy, which resolves them); None: no reason."""
    parts = urlsplit(url)
    host = canonical_host(parts.hostname or "")
    try:
        port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
    except ValueError:
        return None  # the browser says what is wrong with it
    why = refused_because(host, refused)
    if why in (None, "not an IP address") or private_host_allowed(host, port, private_hosts):
        return None
    return f"{host_port(host, port)} is {why}"


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Egress:
    """The proxy, one per browser: start() before Chromium, stop() after it."""

    def __init__(
        self,
        *,
        allowed_domains: tuple[str, ...] = (),
        private_hosts: tuple[str, ...] = (),
        refused: Sequence = REFUSED_NETWORKS,
        resolve: Resolve = socket.getaddrinfo,
    ):
        self.allowed_domains = allowed_domains
        self.private_hosts = private_hosts
        self.refused_networks = refused
        self.resolve = resolve
        self.port = 0
        self._server: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._refused: list[str] = []  # private-address refusals since the last take_refused()
        self._lock = threading.Lock()

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> int:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind((PROXY_HOST, 0))
        server.listen(128)
        self._server, self.port = server, server.getsockname()[1]
        threading.Thread(target=self._accept, args=(server,), name=f"egress-{self.port}", daemon=True).start()
        return self.port

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            _close(server)
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)

    @property
    def server_url(self) -> str:
        return f"socks5://{PROXY_HOST}:{self.port}"

    def take_refused(self) -> list[str]:
        """What the guard refused since the last call, each once (Chromium retries)."""
        with self._lock:
            refused, self._refused = self._refused, []
        return list(dict.fromkeys(refused))

    # -- one connection -------------------------------------------------------------------------

    def _accept(self, server: socket.socket) -> None:
        while self._server is server:
            try:
                client, _address = server.accept()
            except OSError:
                return  # stopped
            self._track(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _forget(self, *sockets: socket.socket | None) -> None:
        for sock in sockets:
            if sock is not None:
                with self._lock:
                    self._open.discard(sock)
                _close(sock)

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(HANDSHAKE_TIMEOUT)
            target = self._handshake(client)
            if target is None:
                return
            upstream = self._open_upstream(client, *target)
            if upstream is not None:
                client.settimeout(None)
                _relay(client, upstream)
        except (OSError, ValueError, struct.error):
            pass  # a client that went away or spoke something else: nothing to tell
        finally:
            self._forget(client, upstream)

    def _handshake(self, client: socket.socket) -> tuple[str, int] | None:
        """SOCKS5 for the worker's own user, CONNECT only: the host and port asked for."""
        version, methods = _read(client, 2)
        _read(client, methods)
        if version != 5:
            return None
        owner = peer_uid(client)
        if owner != os.geteuid():
            log.warning("browser egress refused a connection of another user (uid %s)", owner)
            client.sendall(bytes([5, NO_ACCEPTABLE_METHOD]))
            return None
        client.sendall(b"\x05\x00")
        version, command, _reserved, kind = _read(client, 4)
        if kind == 1:
            host = socket.inet_ntop(socket.AF_INET, _read(client, 4))
        elif kind == 3:
            host = _read(client, _read(client, 1)[0]).decode("ascii")  # Chromium sends punycode
        elif kind == 4:
            host = socket.inet_ntop(socket.AF_INET6, _read(client, 16))
        else:
            _reply(client, ADDRESS_NOT_SUPPORTED)
            return None
        (port,) = struct.unpack("!H", _read(client, 2))
        if command != 1:  # BIND, UDP ASSOCIATE: the browser needs neither
            _reply(client, COMMAND_NOT_SUPPORTED)
            return None
        return host, port

    def _open_upstream(self, client: socket.socket, host: str, port: int) -> socket.socket | None:
        verdict = judge(
            host,
            port,
            allowed_domains=self.allowed_domains,
            private_hosts=self.private_hosts,
            refused=self.refused_networks,
            resolve=self.resolve,
        )
        if verdict.why:
            if verdict.rule == "private":
                log.info("browser egress refused %s", verdict.why)
                with self._lock:
                    self._refused.append(verdict.why)
            _reply(client, verdict.reply)
            return None
        upstream = _connect(verdict.infos)
        if upstream is None:
            _reply(client, REFUSED_BY_HOST)
            return None
        self._track(upstream)
        _reply(client, SUCCEEDED)
        return upstream


def peer_uid(sock: socket.socket, tables: dict[int, str] = SOCKET_TABLES) -> int | None:
    """The user that owns the other end of a TCP connection on this machine, from the kernel's
    socket table (readable by everyone, unlike another process's file descriptors); None when
    it cannot be told, which the proxy takes as a stranger."""
    local, remote = _table_address(sock.getpeername()), _table_address(sock.getsockname())
    try:
        with open(tables[sock.family]) as table:
            next(table)  # the heading
            for line in table:
                fields = line.split()
                if fields[1] == local and fields[2] == remote:
                    return int(fields[7])
    except (OSError, KeyError, IndexError, ValueError, StopIteration):
        return None
    return None


def _table_address(address: tuple) -> str:
    """An address as /proc/net/tcp(6) writes it: the IP in the kernel's byte order, in hex words
    of 32 bits, and the port in hex."""
    packed = socket.inet_pton(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, address[0])
    words = [packed[i : i + 4] for i in range(0, len(packed), 4)]
    ip = "".join(int.from_bytes(word, "big").to_bytes(4, sys.byteorder).hex().upper() for word in words)
    return f"{ip}:{address[1]:04X}"


def _connect(infos: list) -> socket.socket | None:
    """A connection to the first of the checked addresses that answers (rysh_site/egress.py)."""
    try:
        sock = connect_checked(infos, host="", prepare=lambda sock: sock.settimeout(CONNECT_TIMEOUT))
    except OSError:
        return None
    sock.settimeout(None)
    return sock


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Bytes both ways, one thread per direction (neither waits on the other), until both sides
    have finished; a half-close is passed on."""
    back = threading.Thread(target=_pump, args=(b, a), daemon=True)
    back.start()
    _pump(a, b)
    back.join()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:  # one side is gone: end both directions
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ValueError("the client closed the connection")
        data += chunk
    return data


def _reply(sock: socket.socket, code: int) -> None:
    sock.sendall(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
