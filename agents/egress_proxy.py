"""A coding loop's setup fetches its dependencies through this proxy, and through nothing else
(docs/coding-loops.md, "The project's own toolchain"); Claude Code's sandbox does the same on
Linux.

The worker runs an HTTP proxy (CONNECT for https, absolute URIs for plain http) on a Unix socket
in a private folder. The folder is bound into the sandbox, whose network namespace has nothing
but a loopback of its own; there agents/egress_forwarder.py listens on 127.0.0.1:PORT and relays
each connection to the socket, and HTTP_PROXY / HTTPS_PROXY point at it, so pip, npm and go
fetch through the proxy. The proxy lets a request through only to a host an admin listed
(RYSH_SETUP_ALLOW_HOSTS, or a private mirror in RYSH_SETUP_ALLOW_PRIVATE_HOSTS); it reuses the
browser's guard (agents/egress.py): a name is resolved once, refused when an address is
loopback, private, link-local… unless the admin listed it as private, and the connection goes
to the very addresses checked, so DNS rebinding gains nothing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from agents.domains import canonical_host, host_port_listed
from agents.egress import HANDSHAKE_TIMEOUT, Egress, Resolve, Verdict, _connect, _relay, host_port, judge
from rysh_site.egress import REFUSED_NETWORKS

ALLOW_SETTING = "RYSH_SETUP_ALLOW_HOSTS"
PRIVATE_SETTING = "RYSH_SETUP_ALLOW_PRIVATE_HOSTS"
FORWARDER_PORT = 3128  # inside the sandbox's own network namespace: nothing else listens there
HEAD_LIMIT = 64 * 1024
SOCKET_ROOM = 60  # of a Unix socket path's 107 bytes, what the temporary folder may take
FORWARDER = Path(__file__).with_name("egress_forwarder.py")
# hop-by-hop headers a proxy never passes on (RFC 9110 §7.6.1), and the client's to its proxy
_HOP_HEADERS = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te", b"upgrade"}


@dataclass(frozen=True)
class ProxyRequest:
    """What a client asked the proxy for: a tunnel (CONNECT), or one plain-http request whose
    head, rewritten for the origin server, is `forward`."""

    host: str
    port: int
    tunnel: bool
    forward: bytes = b""


def setup_verdict(
    host: str,
    port: int,
    *,
    allowed_hosts: tuple[str, ...],
    private_hosts: tuple[str, ...] = (),
    refused: Sequence = REFUSED_NETWORKS,
    resolve: Resolve = socket.getaddrinfo,
) -> Verdict:
    """Whether a setup command may fetch from host:port, and the addresses to connect to: listed
    by the admin (either list), then the browser's guard of private addresses."""
    host = canonical_host(host)
    if not (host_port_listed(host, port, allowed_hosts) or host_port_listed(host, port, private_hosts)):
        return Verdict(f"{host_port(host, port)} is not in {ALLOW_SETTING}", "domains")
    verdict = judge(host, port, private_hosts=private_hosts, refused=refused, resolve=resolve)
    if verdict.rule == "private":
        return Verdict(f"{verdict.why}; an admin lists a private mirror in {PRIVATE_SETTING}", "private")
    return verdict


def parse_request(head: bytes) -> ProxyRequest:
    """The request head a client sent its proxy (up to and with the blank line); ValueError
    with what is wrong. Plain http keeps its headers but the hop-by-hop ones and closes after
    one response, so every request on a connection is judged."""
    lines = head.split(b"\r\n")
    try:
        method, target, version = lines[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise ValueError("a request line `METHOD TARGET HTTP/1.x` was expected") from None
    if not version.startswith("HTTP/1."):
        raise ValueError(f"{version}: only HTTP/1.x is spoken here")
    if method == "CONNECT":
        host, port = _authority(target)
        return ProxyRequest(host, port, tunnel=True)
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{target[:200]!r}: expected CONNECT host:port or an absolute http:// URI")
    try:
        port = parts.port or 80
    except ValueError:
        raise ValueError(f"{parts.netloc!r}: a bad port") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [line for line in lines[1:] if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    if not any(line.lower().startswith(b"host:") for line in kept):
        kept.insert(0, b"Host: " + parts.netloc.encode("idna"))
    forward = b"\r\n".join([f"{method} {path} {version}".encode("ascii"), *kept, b"Connection: close", b"", b""])
    return ProxyRequest(canonical_host(parts.hostname), port, tunnel=False, forward=forward)


def _authority(target: str) -> tuple[str, int]:
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{target[:200]!r}: CONNECT needs host:port")
    return canonical_host(host), int(port)


class SetupProxy(Egress):
    """The proxy of one setup: `with SetupProxy(...) as proxy:` it listens on its Unix socket;
    `binds`, `environment` and `wrap()` are what the sandbox needs to reach it."""

    def __init__(
        self,
        *,
        allowed_hosts: tuple[str, ...],
        private_hosts: tuple[str, ...] = (),
        refused: Sequence = REFUSED_NETWORKS,
        resolve: Resolve = socket.getaddrinfo,
    ):
        super().__init__(private_hosts=private_hosts, refused=refused, resolve=resolve)
        self.allowed_hosts = allowed_hosts
        self.folder: Path | None = None

    def __enter__(self) -> SetupProxy:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def socket_path(self) -> Path:
        assert self.folder is not None, "start() first"
        return self.folder / "proxy.sock"

    def start(self) -> None:
        # private: 0700, so no other user of the machine reaches the socket
        self.folder = Path(tempfile.mkdtemp(prefix="rysh-egress-", dir=_short_temp()))
        shutil.copyfile(FORWARDER, self.folder / "forward.py")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.socket_path))
        server.listen(128)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), name="setup-egress", daemon=True).start()

    def stop(self) -> None:
        super().stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- what the sandbox needs -----------------------------------------------------------------

    @property
    def binds(self) -> list[tuple[Path, Path]]:
        """The private folder, read-only at its own path (a socket connects on a read-only mount)."""
        assert self.folder is not None, "start() first"
        return [(self.folder, self.folder)]

    @property
    def environment(self) -> dict[str, str]:
        url = f"http://127.0.0.1:{FORWARDER_PORT}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy")
        # NO_PROXY empty: nothing bypasses the proxy (there is no other way out anyway)
        return {name: url for name in names} | {"NO_PROXY": "", "no_proxy": ""}

    def wrap(self, command: str, *, python: str, shell: str) -> str:
        """The command as the sandbox runs it: the forwarder listens first, then execs it."""
        forwarder = [python, "-I", "-S", str(self.folder / "forward.py"), str(self.socket_path)]
        return shlex.join([*forwarder, str(FORWARDER_PORT), shell, "-c", command])

    # -- one connection -------------------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(HANDSHAKE_TIMEOUT)
            head, early = _read_head(client)
            try:
                request = parse_request(head)
            except ValueError as exc:
                _answer(client, 400, "Bad Request", f"rysh setup proxy: {exc}")
                return
            upstream = self._upstream_for(client, request)
            if upstream is None:
                return
            upstream.sendall(request.forward + early)
            client.settimeout(None)
            _relay(client, upstream)
        except (OSError, ValueError):
            pass  # a client that went away or spoke something else: nothing to tell
        finally:
            self._forget(client, upstream)

    def _upstream_for(self, client: socket.socket, request: ProxyRequest) -> socket.socket | None:
        verdict = setup_verdict(
            request.host,
            request.port,
            allowed_hosts=self.allowed_hosts,
            private_hosts=self.private_hosts,
            refused=self.refused_networks,
            resolve=self.resolve,
        )
        if verdict.why:
            with self._lock:
                self._refused.append(verdict.why)
            _answer(client, 403, f"refused by rysh: {verdict.why}", f"rysh setup proxy refused: {verdict.why}")
            return None
        upstream = _connect(verdict.infos)
        if upstream is None:
            _answer(
                client, 502, "Bad Gateway", f"rysh setup proxy: {host_port(request.host, request.port)} did not answer"
            )
            return None
        self._track(upstream)
        if request.tunnel:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        return upstream


def _short_temp() -> str:
    """The temporary folder, unless its path is too long for a Unix socket's (108 bytes)."""
    folder = tempfile.gettempdir()
    return folder if len(folder) <= SOCKET_ROOM else "/tmp"


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request head and whatever the client sent after it already."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise ValueError("the request head is too long")
        chunk = client.recv(HEAD_LIMIT)
        if not chunk:
            raise ValueError("the client closed the connection")
        data += chunk
    head, _, early = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", early


def _answer(client: socket.socket, status: int, reason: str, body: str) -> None:
    """A reply from the proxy itself; its reason phrase is what pip and curl print."""
    reason = "".join(c if c.isprintable() and c.isascii() else "?" for c in reason)[:300]
    text = (body + "\n").encode("utf-8", "replace")
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
    head += f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n"
    client.sendall(head.encode("ascii") + text)


def proxy_python() -> str:
    """The interpreter that runs the forwarder: the worker's own (sandbox.interpreter_binds
    makes it visible when a hidden folder covers it)."""
    return os.path.realpath(sys.executable)
