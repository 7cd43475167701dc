"""Webhook and Slack URLs may not reach internal addresses (the delivery log would map the
internal network): refused when saved, refused again at delivery after DNS, unless an admin
allows the host by name. The log shows error classes, never a socket's text."""

from __future__ import annotations

import re
import socket
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured

from notify import services
from notify.models import Channel, Delivery, DeliveryState
from notify.tasks import deliver
from rysh_site.env import envhosts

pytestmark = pytest.mark.django_db

SECRET = "s" * 32


@pytest.fixture
def nothing_allowed(settings):
    settings.RYSH_NOTIFY_ALLOW_HOSTS = []  # the default (the test settings allow loopback)


def save(url: str, kind: str = "webhook") -> Channel:
    return services.channel_save(
        user=None, name="hook", kind=kind, url=url, secret=SECRET if kind == "webhook" else ""
    )[0]


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://127.0.0.1:9/hook", "a loopback address"),
        ("http://localhost:8080/hook", "a loopback address"),
        ("http://10.0.0.5:22/", "a private address"),
        ("https://192.168.1.1/", "a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a link-local address"),
        ("http://[::1]:6379/", "a loopback address"),
        ("http://[::ffff:10.0.0.1]/", "a private address"),
        ("http://[fe80::1]/", "a link-local address"),
        ("http://2130706433:5432/", "a loopback address"),  # 127.0.0.1 as one number
        ("http://0x7f.1/", "a loopback address"),
        ("http://100.64.0.1/", "a shared (carrier-grade NAT) address"),
    ],
)
def test_it_refuses_an_internal_address_when_the_url_is_saved(nothing_allowed, url, why):
    for kind in ("webhook", "slack"):
        with pytest.raises(services.ChannelError, match=re.escape(why)) as caught:
            save(url, kind)
        assert "public addresses only" in str(caught.value) and "RYSH_NOTIFY_ALLOW_HOSTS" in str(caught.value)
        assert caught.value.field == "url"
    assert not Channel.objects.exists()


def test_an_admin_allows_an_internal_host_by_name(settings):
    settings.RYSH_NOTIFY_ALLOW_HOSTS = ["10.0.0.5", "hooks.internal", "localhost", "xn--bcher-kva.localhost"]
    assert save("http://b\u00fccher.localhost/hook").url == "http://b\u00fccher.localhost/hook"  # as its xn-- form
    Channel.objects.all().delete()
    assert save("http://10.0.0.5:8080/hook").url == "http://10.0.0.5:8080/hook"
    Channel.objects.all().delete()
    assert save("http://localhost:8080/hook").url == "http://localhost:8080/hook"
    Channel.objects.all().delete()
    with pytest.raises(services.ChannelError, match="a private address"):
        save("http://10.0.0.6/hook")  # only the hosts named


def test_a_public_name_is_saved_without_asking_dns(nothing_allowed, monkeypatch):
    looked_up = []
    real = socket.getaddrinfo

    def recording(host, *args, **kwargs):
        looked_up.append((host, kwargs.get("flags", 0)))
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    save("https://hooks.example.com/services/T0/B0/X", "slack")
    # only a numeric parse (no DNS query leaves the machine when a channel is saved)
    assert all(flags & socket.AI_NUMERICHOST for _host, flags in looked_up)


@pytest.fixture
def resolve_to_loopback(monkeypatch):
    """hooks.example resolves to 127.0.0.1 (where the test's receiver listens); each lookup
    of it is counted. Other hosts resolve as usual."""
    lookups = []
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host == "hooks.example" and not kwargs.get("flags", 0) & socket.AI_NUMERICHOST:
            lookups.append(threading.get_ident())
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return lookups


def test_a_name_that_resolves_inside_is_refused_at_delivery(nothing_allowed, receiver, resolve_to_loopback):
    r = receiver(200)
    port = r.server.server_address[1]
    channel = save(f"http://hooks.example:{port}/hooks/SECRETPATH?token=abc")  # a name: fine when saved
    delivery = services.channel_test(channel=channel)
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert r.requests == []  # never connected
    assert delivery.state == DeliveryState.PENDING
    assert delivery.last_error == (
        f"refused: private address (hooks.example:{port} is a loopback address (127.0.0.0/8); "
        "an admin may allow hooks.example in RYSH_NOTIFY_ALLOW_HOSTS)"
    )


def test_an_allowed_name_is_resolved_once_and_reached_at_the_address_checked(settings, receiver, resolve_to_loopback):
    settings.RYSH_NOTIFY_ALLOW_HOSTS = ["hooks.example"]
    r = receiver(200)
    port = r.server.server_address[1]
    delivery = services.channel_test(channel=save(f"http://hooks.example:{port}/hooks/x"))
    assert "sent" in deliver(delivery.pk)
    assert len(resolve_to_loopback) == 1  # http.client did not look it up a second time
    assert r.requests[0]["headers"]["Host"] == f"hooks.example:{port}"


def test_an_internal_address_saved_before_is_refused_at_delivery(nothing_allowed, receiver):
    r = receiver(200)
    channel = Channel.objects.create(name="old", kind="slack", url=r.url, events=["run.ended"])
    delivery = services.channel_test(channel=channel)
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert r.requests == []
    assert delivery.last_error.startswith("refused: private address (127.0.0.1:")
    assert "SECRETPATH" not in delivery.last_error and "token" not in delivery.last_error


def read_request(conn: socket.socket) -> bytes:
    """The whole request: its head, then as many bytes as its Content-Length says."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536) or b"\r\n\r\n"
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(body) < length and (more := conn.recv(65536)):
        body += more
    return head + b"\r\n\r\n" + body


@pytest.fixture
def rude_receiver():
    """Accepts a connection, reads the request, then answers with `reply` (or nothing) and closes."""
    servers = []

    def make(reply: bytes) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        servers.append(sock)

        def serve():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                read_request(conn)
                conn.sendall(reply)
                conn.shutdown(socket.SHUT_WR)
                conn.recv(1)  # until the sender hangs up: closing first could reset the connection

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}/hooks/SECRETPATH?token=abc"

    yield make
    for sock in servers:
        sock.close()


def attempt(url: str) -> str:
    delivery = services.channel_test(channel=save(url))
    deliver(delivery.pk)
    return Delivery.objects.get(pk=delivery.pk).last_error


def test_the_log_shows_an_error_class_and_where_never_the_sockets_text(closed_port_url, rude_receiver):
    assert re.fullmatch(r"connection refused \(127\.0\.0\.1:\d+\)", attempt(closed_port_url))
    Channel.objects.all().delete()
    assert re.fullmatch(r"connection lost \(127\.0\.0\.1:\d+\)", attempt(rude_receiver(b"")))
    Channel.objects.all().delete()
    assert re.fullmatch(r"not an HTTP answer \(127\.0\.0\.1:\d+\)", attempt(rude_receiver(b"SSH-2.0-OpenSSH_9.6\r\n")))


def test_the_allowed_hosts_setting_is_strict(monkeypatch):
    monkeypatch.setenv("RYSH_NOTIFY_ALLOW_HOSTS", " Hooks.Internal. ,10.0.0.7,[::1],, receiver_1 ")
    assert envhosts("RYSH_NOTIFY_ALLOW_HOSTS") == ["hooks.internal", "10.0.0.7", "::1", "receiver_1"]
    for bad in ("http://hooks.internal", "hooks.internal:8080", "*.corp", "hooks internal", "hooks.internal/x"):
        monkeypatch.setenv("RYSH_NOTIFY_ALLOW_HOSTS", f"ok.example,{bad}")
        with pytest.raises(ImproperlyConfigured, match=f"RYSH_NOTIFY_ALLOW_HOSTS: .*got {re.escape(repr(bad))}"):
            envhosts("RYSH_NOTIFY_ALLOW_HOSTS")
    monkeypatch.delenv("RYSH_NOTIFY_ALLOW_HOSTS")
    assert envhosts("RYSH_NOTIFY_ALLOW_HOSTS") == []


def test_nothing_internal_is_allowed_by_default():
    from rysh_site import settings as site_settings  # the module, not the test settings' override

    assert site_settings.RYSH_NOTIFY_ALLOW_HOSTS == []


def test_a_failed_email_shows_its_class_not_the_servers_text(settings, closed_port_url):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", int(closed_port_url.split(":")[2].split("/")[0])
    channel, _ = services.channel_save(user=None, name="mail", kind="email", recipients="a@example.com")
    delivery = services.channel_test(channel=channel)
    deliver(delivery.pk)
    assert Delivery.objects.get(pk=delivery.pk).last_error == "email not sent: connection refused"
