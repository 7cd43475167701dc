"""Webhook signatures cover `id.timestamp.body` (the Standard Webhooks convention), so a
receiver that checks the timestamp refuses a captured delivery sent again; the check printed
in the manual (docs/notifications.md, Webhook format) is the one run here. Secrets have at least 24 bytes."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from pathlib import Path

import pytest
from django.test import Client

from notify import services
from notify.models import Channel, Delivery, DeliveryState
from notify.tasks import deliver
from tests.recipes_git import make_user

pytestmark = pytest.mark.django_db

SECRET = "whsec-test-0123456789abcdef"  # 27 bytes
DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"


@pytest.fixture(scope="module")
def verify():
    """`verify(secret, headers, body)` exactly as the operator's documentation prints it."""
    [snippet] = [block for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if "def verify" in block]
    namespace: dict = {}
    exec(compile(snippet, str(DOC), "exec"), namespace)
    return namespace["verify"]


def webhook(url: str, secret: str = SECRET) -> Channel:
    return services.channel_save(user=None, name="hook", kind="webhook", url=url, secret=secret)[0]


def test_it_signs_id_timestamp_and_body_and_the_documented_check_accepts_it(receiver, verify):
    r = receiver(200)
    delivery = services.channel_test(channel=webhook(r.url))
    before = int(time.time())
    assert "sent" in deliver(delivery.pk)
    [request] = r.requests
    headers, body = request["headers"], request["body"]
    assert headers["webhook-id"] == str(delivery.pk) == headers["X-Rysh-Delivery"]
    assert before - 1 <= int(headers["webhook-timestamp"]) <= time.time() + 1
    assert re.fullmatch(r"v1,[A-Za-z0-9+/]{43}=", headers["webhook-signature"])
    assert verify(SECRET, headers, body)
    # today's header stays beside them, for receivers written against it
    assert headers["X-Rysh-Signature"] == "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def test_the_documented_check_refuses_a_replay_a_changed_body_and_another_secret(receiver, verify, monkeypatch):
    r = receiver(200)
    deliver(services.channel_test(channel=webhook(r.url)).pk)
    headers, body = r.requests[0]["headers"], r.requests[0]["body"]
    assert verify(SECRET, headers, body)
    assert not verify(SECRET, headers, body.replace(b'"test"', b'"run.ended"'))
    assert not verify("another-secret-of-24-bytes!", headers, body)
    # the same delivery captured and sent again ten minutes later: its timestamp gives it away,
    # and moving the timestamp breaks the signature
    later = time.time() + 600
    with monkeypatch.context() as patched:
        patched.setattr(time, "time", lambda: later)
        assert not verify(SECRET, headers, body)
        assert not verify(SECRET, {**headers, "webhook-timestamp": str(int(later))}, body)
    assert not verify(SECRET, {k: v for k, v in headers.items() if k != "webhook-timestamp"}, body)


def test_each_attempt_is_signed_at_its_own_time(receiver, verify, monkeypatch):
    r = receiver(500, 200)
    delivery = services.channel_test(channel=webhook(r.url))
    deliver(delivery.pk)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 30)  # the retry, 30 s on
    deliver(delivery.pk)
    first, second = (request["headers"] for request in r.requests)
    assert r.requests[0]["body"] == r.requests[1]["body"] and first["webhook-id"] == second["webhook-id"]
    assert int(second["webhook-timestamp"]) - int(first["webhook-timestamp"]) >= 29
    assert first["webhook-signature"] != second["webhook-signature"]
    assert verify(SECRET, second, r.requests[1]["body"])


def test_a_secret_under_24_bytes_is_refused_when_saved():
    with pytest.raises(services.ChannelError, match=r"at least 24 bytes \(this one has 23\)") as caught:
        webhook("http://127.0.0.1:9/hook", secret="x" * 23)
    assert caught.value.field == "secret" and not Channel.objects.exists()
    assert webhook("http://127.0.0.1:9/hook", secret="é" * 12).secret == "é" * 12  # bytes, not characters


def test_the_form_says_so_beside_the_secret_field():
    client = Client()
    client.force_login(make_user("admin-user", role="admin"))
    page = client.post(
        "/notifications/", {"name": "hook", "kind": "webhook", "url": "http://127.0.0.1:9/hook", "secret": "hunter2"}
    ).content.decode()
    assert '<ul class="errorlist" id="id_secret_error"><li>the signing secret must be at least 24 bytes' in page
    assert not Channel.objects.exists()


def test_a_short_secret_saved_before_refuses_deliveries_until_it_is_replaced(receiver):
    r = receiver(200)
    channel = Channel.objects.create(name="old", kind="webhook", url=r.url, secret="short", events=["run.ended"])
    delivery = services.channel_test(channel=channel)
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert r.requests == [] and delivery.state == DeliveryState.PENDING
    assert delivery.last_error.startswith("refused: the signing secret is shorter than 24 bytes")
    client = Client()
    client.force_login(make_user("admin-user", role="admin"))
    assert "signing secret too short: deliveries refused" in client.get("/notifications/").content.decode()
    assert 'id="short-secret"' in client.get(f"/notifications/{channel.pk}/").content.decode()
    # saving with the field blank generates a new secret, shown once; the retry then goes out
    client.post(f"/notifications/{channel.pk}/", {"name": "old", "kind": "webhook", "url": "", "secret": ""})
    channel.refresh_from_db()
    assert len(channel.secret) == 64 and channel.secret in client.get(f"/notifications/{channel.pk}/").content.decode()
    assert "sent" in deliver(delivery.pk)
    assert Delivery.objects.get(pk=delivery.pk).state == DeliveryState.SENT
