"""The one guarded connection (rysh_site/egress.py, docs/security.md): resolve once, refuse an
internal address unless allowed, connect to the address that was checked."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rysh_site.egress import REFUSED_NETWORKS, connect_checked, first_refusal, guarded_connection


def info(address: str, port: int) -> tuple:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sockaddr = (address, port, 0, 0) if family == socket.AF_INET6 else (address, port)
    return (family, socket.SOCK_STREAM, 6, "", sockaddr)


class Refused(Exception):
    pass


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()  # the backlog takes the connection: no accept() needed
    yield server.getsockname()[1]
    server.close()


@given(st.sampled_from(REFUSED_NETWORKS), st.integers(min_value=0, max_value=2**32 - 1))
def test_it_refuses_every_address_in_a_refused_network(pair, offset):
    network, _why = pair
    address = str(network[offset % network.num_addresses])
    found = first_refusal([info("93.184.216.34", 80), info(address, 80)])
    assert found is not None and found[0] == address  # the reason: the first network that holds it


def test_it_lets_public_addresses_through():
    assert first_refusal([info("93.184.216.34", 80), info("2606:2800:220:1::1", 80)]) is None


def test_it_refuses_before_it_connects_and_says_so_through_the_callers_refusal():
    asked = []
    connect = guarded_connection(
        refusal=lambda host, address, why: Refused(f"{host} {address} {why}"),
        resolve=lambda host, port: [info("10.1.2.3", port)],
        prepare=lambda sock: asked.append(sock),
    )
    with pytest.raises(Refused, match=r"inside.example 10.1.2.3 a private address \(10.0.0.0/8\)"):
        connect(("inside.example", 80))
    assert asked == []


def test_it_connects_to_the_address_it_checked(listener):
    port = listener
    loopback_ok = tuple(p for p in REFUSED_NETWORKS if p[0] != ipaddress.ip_network("127.0.0.0/8"))
    resolved = []

    def resolve(host, port):
        resolved.append(host)
        return [info("127.0.0.1", port)]

    connect = guarded_connection(refusal=lambda *a: Refused(a), refused=loopback_ok, resolve=resolve)
    sock = connect(("name.example", port), timeout=5)
    try:
        assert sock.getpeername() == ("127.0.0.1", port) and resolved == ["name.example"]
    finally:
        sock.close()


def test_an_allowed_host_is_not_checked(listener):
    port = listener
    connect = guarded_connection(
        refusal=lambda *a: Refused(a), resolve=lambda host, port: [info("127.0.0.1", port)], check=False
    )
    connect(("allowed.example", port), timeout=5).close()


def test_it_raises_the_last_error_when_no_address_answers():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    with pytest.raises(ConnectionRefusedError):
        connect_checked([info("127.0.0.1", port)], host="gone.example", prepare=lambda sock: sock.settimeout(5))
    with pytest.raises(OSError, match="gone.example resolves to no address"):
        connect_checked([], host="gone.example", prepare=lambda sock: None)
