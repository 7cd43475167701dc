"""What user or model text can do once it is in a notification: nothing in Slack (escaped in
every text, the fallback included), and nothing to an email's headers (one-line subjects)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from django.core import mail

from notify import events, services
from notify.models import Delivery, DeliveryState
from notify.senders import slack_message
from notify.tasks import deliver

pytestmark = pytest.mark.django_db

HOSTILE = "<!channel> <http://evil.example|run #7> & <@U123>"


def hostile_notice(**fields) -> events.Notice:
    return events.Notice(
        **{
            "event": "run.ended",
            "title": f"run #7 task/job ended: error: {HOSTILE}",
            "lines": (f"cause: {HOSTILE}",),
            "link": "https://rysh.example/runs/7/",
            "link_label": "run #7",
            **fields,
        }
    )


def texts(message: dict) -> list[str]:
    return [message["text"]] + [block["text"]["text"] for block in message["blocks"]]


def test_every_slack_text_escapes_what_slack_would_read_as_markup():
    message = slack_message(hostile_notice())
    for text in texts(message):
        assert "<!channel>" not in text and "<http://evil" not in text and "<@U123>" not in text, text
        assert "&lt;!channel&gt; &lt;http://evil.example|run #7&gt; &amp; &lt;@U123&gt;" in text, text
    # the only markup left is the dashboard's own link
    assert re.findall(r"<[^>]*>", "".join(texts(message))) == ["<https://rysh.example/runs/7/|run #7>"]


def test_a_change_title_reaches_slack_escaped(receiver, settings):
    settings.RYSH_SITE_URL = "https://rysh.example"
    r = receiver(200)
    channel, _ = services.channel_save(user=None, name="team", kind="slack", url=r.url)
    change = SimpleNamespace(
        pk=3, kind="task", name="job", new_name="", author="mallory", conflicts=[], state="open", title=HOSTILE
    )
    deliver(services.queue(channel, events.change("change.opened", change)).pk)
    body = json.loads(r.requests[0]["body"])
    assert "<!channel>" not in json.dumps(body) and "<http://evil" not in json.dumps(body)
    assert body["text"].startswith("change request #3 opened: &lt;!channel&gt;")


def email_channel(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    return services.channel_save(user=None, name="mail", kind="email", recipients="ops@example.com")[0]


def test_a_cause_with_a_newline_is_mailed_with_a_one_line_subject(settings):
    channel = email_channel(settings)
    notice = hostile_notice(title="run #7 task/job ended: error: boom\nBcc: everyone@example.com\r\n\tmore")
    delivery = services.queue(channel, notice)
    assert "sent" in deliver(delivery.pk)
    [message] = mail.outbox
    assert message.subject == "[rysh] run #7 task/job ended: error: boom Bcc: everyone@example.com more"
    assert message.bcc == [] and message.to == ["ops@example.com"]
    assert Delivery.objects.get(pk=delivery.pk).state == DeliveryState.SENT


def test_a_long_title_is_cut_to_a_subject_with_an_ellipsis(settings):
    channel = email_channel(settings)
    deliver(services.queue(channel, hostile_notice(title="word " * 200)).pk)
    [message] = mail.outbox
    assert len(message.subject) == 150 and message.subject.endswith("…") and "\n" not in message.subject


def test_a_notice_title_is_one_line_wherever_it_goes():
    notice = events.Notice.from_dict(hostile_notice(title="line one\nline two").as_dict())
    assert notice.title == "line one line two"
    assert len(hostile_notice(title="x" * 1000).title) == events.TITLE_MAX
