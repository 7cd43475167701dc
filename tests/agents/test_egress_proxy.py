"""The setup proxy (agents/egress_proxy.py): what it lets a coding loop's setup fetch, over its
Unix socket, with real sockets. Only loopback is ever dialled: other addresses are judged through
a resolver table, never connected to."""

from __future__ import annotations

import ipaddress
import socket
import threading

import pytest

from agents import egress_proxy
from agents.egress_proxy import SetupProxy, parse_request, setup_verdict
from tests.agents.test_browser_egress import Listener, fake_resolver

PUBLIC = "151.101.0.223"  # judged only, never dialled


@pytest.fixture
def dialled(monkeypatch):
    """Every address the proxy dials; anything but loopback fails the test."""
    found = []
    real = egress_proxy._connect

    def connect(infos):
        for *_ignored, sockaddr in infos:
            found.append(sockaddr[0])
            assert ipaddress.ip_address(sockaddr[0]).is_loopback, f"the proxy dialled {sockaddr[0]}"
        return real(infos)

    monkeypatch.setattr(egress_proxy, "_connect", connect)
    return found


@pytest.fixture
def listener():
    found = Listener()
    yield found
    found.close()


def ask(proxy: SetupProxy, head: bytes, then: bytes = b"") -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(5)
    client.connect(str(proxy.socket_path))
    client.sendall(head + then)
    return client


def read_all(client: socket.socket) -> bytes:
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    client.close()
    return data


# -- what a client asks for ----------------------------------------------------------------------------


def test_it_reads_a_tunnel_and_rewrites_a_plain_request_for_the_origin():
    assert parse_request(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n") == (
        egress_proxy.ProxyRequest("pypi.org", 443, tunnel=True)
    )
    assert parse_request(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").host == "::1"
    plain = parse_request(
        b"GET http://Mirror.Example:8080/simple/x/?a=1 HTTP/1.1\r\nUser-Agent: pip\r\n"
        b"Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\n"
    )
    assert (plain.host, plain.port, plain.tunnel) == ("mirror.example", 8080, False)
    assert plain.forward == (
        b"GET /simple/x/?a=1 HTTP/1.1\r\nHost: Mirror.Example:8080\r\nUser-Agent: pip\r\nConnection: close\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("head", "says"),
    [
        (b"GET https://pypi.org/ HTTP/1.1\r\n\r\n", "expected CONNECT host:port or an absolute http:// URI"),
        (b"GET /simple/ HTTP/1.1\r\n\r\n", "expected CONNECT host:port or an absolute http:// URI"),
        (b"CONNECT pypi.org HTTP/1.1\r\n\r\n", "CONNECT needs host:port"),
        (b"CONNECT pypi.org:99999 HTTP/1.1\r\n\r\n", "CONNECT needs host:port"),
        (b"GET http://x/ HTTP/2\r\n\r\n", "only HTTP/1.x"),
        (b"hello\r\n\r\n", "a request line"),
    ],
)
def test_it_refuses_what_is_not_a_proxy_request(head, says):
    with pytest.raises(ValueError, match=says):
        parse_request(head)


# -- which hosts -----------------------------------------------------------------------------------------


def test_only_listed_hosts_pass_and_a_name_resolving_inside_is_refused_unless_listed_as_private():
    resolve = fake_resolver(
        {"pypi.org": [PUBLIC], "files.example": [PUBLIC], "pypi.corp": ["10.0.0.5"], "10.0.0.7": ["10.0.0.7"]}
    )
    allowed = ("pypi.org:443", "*.example", "pypi.corp")

    def verdict(host, port, private=()):
        return setup_verdict(host, port, allowed_hosts=allowed, private_hosts=private, resolve=resolve)

    assert verdict("pypi.org", 443).why is None and verdict("PYPI.ORG.", 443).infos[0][4][0] == PUBLIC
    assert verdict("files.example", 80).why is None
    assert verdict("pypi.org", 80).why == "pypi.org:80 is not in RYSH_SETUP_ALLOW_HOSTS"
    assert verdict("example.org", 443).rule == "domains"
    inside = verdict("pypi.corp", 443)
    assert inside.rule == "private" and inside.why == (
        "pypi.corp:443 (it resolves to 10.0.0.5) is a private address (10.0.0.0/8); "
        "an admin lists a private mirror in RYSH_SETUP_ALLOW_PRIVATE_HOSTS"
    )
    assert verdict("pypi.corp", 443, private=("pypi.corp:443",)).why is None
    assert verdict("pypi.corp", 8443, private=("pypi.corp:443",)).rule == "private"  # that port only
    # a private mirror listed only there is allowed by that entry alone
    assert (
        setup_verdict("10.0.0.7", 3141, allowed_hosts=(), private_hosts=("10.0.0.7:3141",), resolve=resolve).why is None
    )


# -- the proxy on its socket ---------------------------------------------------------------------------


class Origin:
    """A tiny HTTP server on 127.0.0.2 that says what it received."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.2", 0))
        self.port = self.server.getsockname()[1]
        self.heads: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                    data += chunk
                self.heads.append(data)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")

    def close(self):
        self.server.close()


def test_it_relays_plain_http_and_tunnels_to_an_allowed_host(dialled, listener):
    origin = Origin()
    private = (f"127.0.0.2:{origin.port}", f"127.0.0.2:{listener.port}")
    try:
        with SetupProxy(allowed_hosts=(), private_hosts=private) as proxy:
            head = f"GET http://127.0.0.2:{origin.port}/simple/ HTTP/1.1\r\nProxy-Authorization: x\r\n\r\n".encode()
            assert read_all(ask(proxy, head)).endswith(b"\r\n\r\nhello")
            assert origin.heads[0].startswith(b"GET /simple/ HTTP/1.1\r\nHost: 127.0.0.2:")
            assert b"Proxy-Authorization" not in origin.heads[0] and b"Connection: close" in origin.heads[0]
            client = ask(proxy, f"CONNECT 127.0.0.2:{listener.port} HTTP/1.1\r\n\r\n".encode())
            assert client.recv(100) == b"HTTP/1.1 200 Connection established\r\n\r\n"
            client.sendall(b"tls bytes")
            assert client.recv(100) == b"echo:tls bytes"
            client.close()
            assert proxy.take_refused() == []
            folder = proxy.folder
            assert oct(folder.stat().st_mode & 0o777) == "0o700"
        assert not folder.exists()  # gone with the proxy
    finally:
        origin.close()
    assert dialled == ["127.0.0.2", "127.0.0.2"]


def test_it_refuses_a_host_not_listed_and_a_listed_name_that_resolves_inside(dialled, listener):
    resolve = fake_resolver({"mirror.test": ["127.0.0.2"]})
    with SetupProxy(allowed_hosts=("mirror.test",), resolve=resolve) as proxy:
        said = read_all(ask(proxy, b"CONNECT pypi.org:443 HTTP/1.1\r\n\r\n"))
        assert said.startswith(b"HTTP/1.1 403 refused by rysh: pypi.org:443 is not in RYSH_SETUP_ALLOW_HOSTS\r\n")
        said = read_all(ask(proxy, f"GET http://mirror.test:{listener.port}/ HTTP/1.1\r\n\r\n".encode()))
        assert said.startswith(b"HTTP/1.1 403 refused by rysh: mirror.test:")
        assert b"(it resolves to 127.0.0.2) is a loopback address" in said
        refused = proxy.take_refused()
        assert refused[0] == "pypi.org:443 is not in RYSH_SETUP_ALLOW_HOSTS" and "mirror.test" in refused[1]
    assert listener.connections == 0 and dialled == []


def test_a_name_is_resolved_once_and_dialled_at_the_address_checked(dialled, listener):
    """DNS rebinding: a resolver that answers something else the second time gains nothing."""
    answers = iter([["127.0.0.2"], [PUBLIC]])
    asked = []

    def rebinding(host, port, type=socket.SOCK_STREAM, **_):
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in next(answers)]

    with SetupProxy(allowed_hosts=(), private_hosts=(f"mirror.test:{listener.port}",), resolve=rebinding) as proxy:
        client = ask(proxy, f"CONNECT mirror.test:{listener.port} HTTP/1.1\r\n\r\n".encode())
        assert client.recv(100).startswith(b"HTTP/1.1 200")
        client.sendall(b"hi")
        assert client.recv(100) == b"echo:hi"  # the listener took it
        client.close()
    assert asked == ["mirror.test"] and dialled == ["127.0.0.2"] and listener.connections == 1


def test_it_answers_nonsense_with_a_bad_request():
    with SetupProxy(allowed_hosts=("pypi.org",)) as proxy:
        said = read_all(ask(proxy, b"GET https://pypi.org/ HTTP/1.1\r\n\r\n"))
    assert said.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"absolute http:// URI" in said
