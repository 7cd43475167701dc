"""The browser's egress proxy serves only this worker's user (a local process of another user
is refused at the handshake), and the address guard it shares with http_get refuses the
SIIT (IPv4-translated), site-local and discard-only IPv6 ranges, whatever the address inside."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents import egress
from agents.egress import Egress, judge
from rysh_site.egress import refused_because
from tests.agents.test_browser_egress import fake_resolver

NOBODY = 65534


def addresses_in(network: str):
    net = ipaddress.ip_network(network)
    return st.integers(0, net.num_addresses - 1).map(lambda offset: str(net.network_address + offset))


NON_PUBLIC = st.one_of(addresses_in("::ffff:0:0:0/96"), addresses_in("fec0::/10"), addresses_in("100::/64"))


@given(NON_PUBLIC)
def test_siit_site_local_and_discard_addresses_are_refused_by_the_guard_and_the_proxy(address):
    assert refused_because(address) is not None
    verdict = judge("host.example", 443, resolve=fake_resolver({"host.example": [address]}))
    assert verdict.rule == "private" and verdict.infos == []
    assert judge(address, 443, resolve=fake_resolver({address: [address]})).rule == "private"


@given(st.sampled_from(["10.0.0.1", "127.0.0.1", "169.254.169.254", "192.168.1.1"]))
def test_an_siit_address_is_judged_as_the_ipv4_it_carries(inner):
    siit = ipaddress.IPv6Address(int(ipaddress.ip_address("::ffff:0:0:0")) | int(ipaddress.ip_address(inner)))
    assert refused_because(str(siit)) == refused_because(inner)


def test_the_ranges_are_named():
    assert "IPv4-translated (SIIT)" in refused_because("::ffff:0:808:808")
    assert "site-local" in refused_because("fec0::1")
    assert "discard-only" in refused_because("100::1")
    assert refused_because("::ffff:8.8.8.8") is None  # IPv4-mapped: judged as the public IPv4 it carries
    assert refused_because("2001:4860:4860::8888") is None


def test_the_proxy_knows_who_is_on_the_other_end():
    guard = Egress()
    guard.start()
    try:
        with socket.create_connection(("127.0.0.1", guard.port), timeout=5) as client:
            client.sendall(b"\x05\x01\x00")
            assert client.recv(2) == b"\x05\x00"  # this worker's user: served
        server = socket.create_server(("127.0.0.1", 0))
        with socket.create_connection(server.getsockname(), timeout=5):
            accepted, _ = server.accept()
            assert egress.peer_uid(accepted) == os.geteuid()
            accepted.close()
        server.close()
    finally:
        guard.stop()


def test_a_process_of_another_user_is_refused_at_the_handshake():
    if os.geteuid() != 0:
        pytest.skip("only root can start a process as another user")
    guard = Egress()
    guard.start()
    # bash's /dev/tcp: no interpreter of ours, which may live where another user cannot read
    knock = f"exec 3<>/dev/tcp/127.0.0.1/{guard.port}; printf '\\005\\001\\000' >&3; head -c 2 <&3 | od -An -tx1"
    try:
        done = subprocess.run(["/bin/bash", "-c", knock], user=NOBODY, capture_output=True, text=True, timeout=20)
    finally:
        guard.stop()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["05", "ff"]  # "no acceptable method": nothing is relayed for another user
