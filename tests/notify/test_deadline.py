"""One deadline (RYSH_NOTIFY_TIMEOUT) for a whole delivery attempt: a receiver that drips its
answer a byte at a time, each byte well within any per-read timeout, or a slow DNS lookup,
costs a worker the deadline, not the receiver's pleasure."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from notify import services
from notify.models import Delivery, DeliveryState
from notify.tasks import deliver

pytestmark = pytest.mark.django_db

DRIP_SECONDS = 0.2  # between two bytes: far below any per-read timeout
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX-Padding: aaaaaa\r\n\r\nok, received"


@pytest.fixture
def dripping_receiver():
    """Reads the request, then answers ANSWER a byte every DRIP_SECONDS (about 15 s in all),
    from byte `start` on (the bytes before it at once)."""
    listeners, stop = [], threading.Event()

    def make(start: int = 0) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        listeners.append(sock)

        def serve():
            conn, _ = sock.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(ANSWER[:start])
                for byte in ANSWER[start:]:
                    if stop.wait(DRIP_SECONDS):
                        return
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:  # the sender hung up: what the deadline is for
                        return

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}/hooks/SECRETPATH"

    yield make
    stop.set()
    for sock in listeners:
        sock.close()


def attempt(url: str) -> tuple[Delivery, float]:
    channel, _ = services.channel_save(user=None, name="hook", kind="webhook", url=url, secret="s" * 32)
    delivery = services.channel_test(channel=channel)
    started = time.monotonic()
    deliver(delivery.pk)
    return Delivery.objects.get(pk=delivery.pk), time.monotonic() - started


@pytest.mark.parametrize("start", [0, ANSWER.index(b"ok, received")], ids=["status-and-headers", "body"])
def test_a_dripping_receiver_costs_the_deadline_not_more(settings, dripping_receiver, start):
    settings.RYSH_NOTIFY_TIMEOUT = 1
    delivery, took = attempt(dripping_receiver(start))
    assert took < 3, f"the attempt took {took:.1f}s"
    assert delivery.state == DeliveryState.PENDING
    assert delivery.last_error.startswith("timed out (127.0.0.1:") and delivery.last_error.endswith(", 1s)")


def test_a_slow_lookup_counts_against_the_deadline(settings, monkeypatch, closed_port_url):
    settings.RYSH_NOTIFY_TIMEOUT = 1
    settings.RYSH_NOTIFY_ALLOW_HOSTS = ["slow.example"]
    real = socket.getaddrinfo

    def slow(host, port, *args, **kwargs):
        if host == "slow.example" and not kwargs.get("flags", 0) & socket.AI_NUMERICHOST:
            time.sleep(4)
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    port = closed_port_url.split(":")[2].split("/")[0]
    delivery, took = attempt(f"http://slow.example:{port}/hooks")
    assert took < 3, f"the attempt took {took:.1f}s"
    assert delivery.last_error == f"timed out (slow.example:{port}, 1s)"


def test_an_answer_in_time_is_sent(settings, receiver):
    settings.RYSH_NOTIFY_TIMEOUT = 1
    r = receiver(200)
    delivery, took = attempt(r.url)
    assert delivery.state == DeliveryState.SENT and len(r.requests) == 1
