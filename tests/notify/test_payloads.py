"""What user or model text can do once it is in a notification: nothing in Slack (escaped in
every text, the fallback included)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from notify import events, services
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
