"""Deliveries against a real loopback receiver: the body, its signature, retries, Slack, email."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
from django.core import mail
from django_q.conf import Conf
from django_q.models import Schedule

from notify import events, senders, services
from notify.models import Attempt, Channel, Delivery, DeliveryState
from notify.tasks import deliver

pytestmark = pytest.mark.django_db


def webhook(url, **fields) -> Channel:
    channel, _ = services.channel_save(
        user=None, name=fields.pop("name", "hook"), kind="webhook", url=url, events_wanted=["run.ended"], **fields
    )
    return channel


def queued(channel) -> Delivery:
    return services.channel_test(channel=channel)


def test_it_posts_the_json_body_signed_with_the_channel_secret(receiver):
    r = receiver(200)
    channel = webhook(r.url, secret="s3cret-s3cret-s3cret-s3cret")
    delivery = queued(channel)
    assert "sent" in deliver(delivery.pk)
    [request] = r.requests
    body = request["body"]
    expected = "sha256=" + hmac.new(b"s3cret-s3cret-s3cret-s3cret", body, hashlib.sha256).hexdigest()
    assert request["headers"]["X-Rysh-Signature"] == expected
    assert request["headers"]["X-Rysh-Event"] == "test"
    assert request["headers"]["X-Rysh-Delivery"] == str(delivery.pk)
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["path"] == "/hooks/T000/SECRETPATH?token=abc"
    data = json.loads(body)
    assert data["event"] == "test" and data["delivery"] == delivery.pk
    assert data["link"].endswith("/notifications/deliveries/")
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.SENT and delivery.last_status == 200 and delivery.attempts == 1


def test_it_generates_a_secret_when_none_is_given_and_it_verifies(receiver):
    r = receiver(200)
    channel, shown = services.channel_save(user=None, name="gen", kind="webhook", url=r.url)
    assert shown and shown == channel.secret and len(shown) == 64
    deliver(queued(channel).pk)
    body = r.requests[0]["body"]
    assert r.requests[0]["headers"]["X-Rysh-Signature"] == senders.signature(shown, body)


def test_it_retries_after_a_500_with_backoff_then_succeeds(receiver):
    r = receiver(500, 200)
    delivery = queued(webhook(r.url))
    before = time.time()
    said = deliver(delivery.pk)
    assert "attempt 1 failed" in said
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.PENDING and delivery.last_status == 500
    assert "HTTP 500" in delivery.last_error
    assert "SECRETPATH" not in delivery.last_error and "token" not in delivery.last_error
    # the next attempt is a django-q2 ONCE schedule, 30 s later
    retry = Schedule.objects.get(name=f"notify-{delivery.pk}-2")
    assert retry.func == "notify.tasks.deliver" and retry.schedule_type == Schedule.ONCE
    assert 25 <= retry.next_run.timestamp() - before <= 40
    assert delivery.next_attempt_at == retry.next_run
    # what django-q2 runs when it fires
    assert "sent" in deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.SENT and delivery.attempts == 2 and delivery.next_attempt_at is None
    assert [(a.number, a.ok, a.status) for a in delivery.attempt_rows.all()] == [(1, False, 500), (2, True, 200)]
    assert len(r.requests) == 2
    assert r.requests[0]["body"] == r.requests[1]["body"]  # the same delivery, the same signed body


def test_it_gives_up_after_five_attempts(closed_port_url):
    delivery = queued(webhook(closed_port_url))
    for _ in range(services.MAX_ATTEMPTS):
        deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.FAILED and delivery.attempts == 5
    assert delivery.last_error.startswith("connection refused (127.0.0.1:") and "SECRETPATH" not in delivery.last_error
    assert Attempt.objects.filter(delivery=delivery).count() == 5
    assert "nothing to do" in deliver(delivery.pk)  # a late retry sends nothing


def test_a_hanging_receiver_costs_an_attempt_its_timeout_not_more(sleeping_receiver, settings):
    settings.RYSH_NOTIFY_TIMEOUT = 0.5
    delivery = queued(webhook(sleeping_receiver))
    started = time.monotonic()
    deliver(delivery.pk)
    took = time.monotonic() - started
    delivery.refresh_from_db()
    assert took < 3
    assert delivery.last_error.startswith("timed out (127.0.0.1:") and delivery.last_error.endswith(", 0.5s)")


def test_it_refuses_urls_that_are_not_http():
    with pytest.raises(services.ChannelError, match="http:// or https://"):
        services.channel_save(user=None, name="x", kind="webhook", url="file:///etc/passwd")
    with pytest.raises(services.ChannelError, match="http:// or https://"):
        services.channel_save(user=None, name="x", kind="slack", url="gopher://example.com/")


def test_it_sends_slacks_format_with_a_link_back_to_the_run(receiver, settings):
    settings.RYSH_SITE_URL = "https://rysh.example"
    r = receiver(200)
    channel, _ = services.channel_save(user=None, name="team-slack", kind="slack", url=r.url)
    notice = events.Notice(
        event="run.ended",
        title="run #7 task/job ended: fulfilled <b>",
        lines=("cause: fulfilled",),
        link="https://rysh.example/runs/7/",
        link_label="run #7",
    )
    delivery = services.queue(channel, notice)
    deliver(delivery.pk)
    body = r.json()
    assert body["text"].startswith("run #7 task/job ended")
    [block] = body["blocks"]
    assert block["type"] == "section" and block["text"]["type"] == "mrkdwn"
    assert "<https://rysh.example/runs/7/|run #7>" in block["text"]["text"]
    assert "&lt;b&gt;" in block["text"]["text"]  # Slack's escaping
    assert "X-Rysh-Signature" not in r.requests[0]["headers"]


def test_it_emails_the_recipients_through_djangos_mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    channel, _ = services.channel_save(
        user=None, name="mail", kind="email", recipients="a@example.com, b@example.com", events_wanted=["run.ended"]
    )
    deliver(queued(channel).pk)
    [message] = mail.outbox
    assert message.to == ["a@example.com", "b@example.com"]
    assert message.subject == "[rysh] test notification for channel mail"
    assert "/notifications/deliveries/" in message.body
    assert Delivery.objects.get().state == DeliveryState.SENT


def test_the_default_email_backend_is_the_console():
    from rysh_site import settings as site_settings  # the module, not the test's overrides

    assert site_settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"


def test_it_refuses_an_email_channel_without_good_recipients():
    with pytest.raises(services.ChannelError, match="not an email address"):
        services.channel_save(user=None, name="m", kind="email", recipients="nobody")
    with pytest.raises(services.ChannelError, match="at least one"):
        services.channel_save(user=None, name="m", kind="email", recipients=" , ")


def test_the_queued_task_runs_by_its_dotted_path_after_commit(
    receiver, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(Conf, "SYNC", True)  # django-q2 runs the queued task here and now
    r = receiver(200)
    channel = webhook(r.url)
    with django_capture_on_commit_callbacks(execute=True):
        delivery = queued(channel)
        assert r.requests == []  # nothing leaves before the transaction commits
    assert len(r.requests) == 1
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.SENT
