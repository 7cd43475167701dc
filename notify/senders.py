"""How a Notice leaves: a signed JSON POST, a Slack message, an email. One attempt each;
retries are services' business. Errors come back redacted: a URL's path and query (where
Slack and most webhooks keep their secret) and the HMAC secret never appear in them.

Webhook URLs are entered by admins, so loopback and private addresses are allowed (a
receiver on the same machine is a normal self-hosted setup, and the tests use one); only
http and https are, and redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import send_mail

from notify.events import Notice
from notify.transport import BadURL, parse_url

TIMEOUT_SECONDS = 5  # a receiver that hangs costs a worker this long, never a run anything
SIGNATURE_HEADER = "X-Rysh-Signature"


class SendError(Exception):
    """An attempt failed; the message is safe to show and store."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Sent:
    status: int | None  # HTTP status; None for email


def signature(secret: str, body: bytes) -> str:
    """`sha256=<hex>`: HMAC-SHA256 of the exact body bytes, keyed with the channel's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_body(notice: Notice, delivery_id: int) -> bytes:
    return json.dumps({"delivery": delivery_id, **notice.as_dict()}, sort_keys=True).encode()


def send_webhook(channel, notice: Notice, delivery_id: int) -> Sent:
    body = webhook_body(notice, delivery_id)
    headers = {
        "X-Rysh-Event": notice.event,
        "X-Rysh-Delivery": str(delivery_id),
        SIGNATURE_HEADER: signature(channel.secret, body),
    }
    return Sent(post_json(channel.url, body, headers))


def slack_message(notice: Notice) -> dict:
    """Slack's incoming-webhook format: `text` (the fallback) and a section block with the
    link as `<url|label>`; &, < and > are escaped as Slack asks."""
    lines = "\n".join(_slack_escape(line) for line in notice.lines)
    link = f"<{notice.link}|{_slack_escape(notice.link_label)}>"
    return {
        "text": f"{notice.title} {notice.link}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{_slack_escape(notice.title)}*\n{lines}\n{link}"}}
        ],
    }


def send_slack(channel, notice: Notice, delivery_id: int) -> Sent:
    return Sent(post_json(channel.url, json.dumps(slack_message(notice)).encode(), {}))


def send_email(channel, notice: Notice, delivery_id: int) -> Sent:
    if not channel.recipient_list:
        raise SendError("the channel has no recipients")
    try:
        send_mail(
            subject=f"[rysh] {notice.title}"[:200],
            message=f"{notice.text}\n\n{notice.link_label}: {notice.link}\n",
            from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=channel.recipient_list,
        )
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
        raise SendError(f"email not sent: {type(exc).__name__}: {_scrub(str(exc), channel)}") from None
    return Sent(None)


SENDERS = {"webhook": send_webhook, "slack": send_slack, "email": send_email}


def post_json(url: str, body: bytes, headers: dict, timeout: float | None = None) -> int:
    """POST, return the status for a 2xx; SendError (redacted) for anything else."""
    timeout = timeout or TIMEOUT_SECONDS
    try:
        target = parse_url(url)
    except BadURL as exc:  # stored before URLs were checked as a whole
        raise SendError(f"bad URL: {exc}; an admin saves the channel's URL again") from None
    where = target.where
    if target.scheme == "https":
        connection = http.client.HTTPSConnection(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
    try:
        connection.request(
            "POST",
            target.path,
            body=body,
            headers={"Content-Type": "application/json", "User-Agent": "rysh-notify/1", **headers},
        )
        response = connection.getresponse()
        response.read(64 * 1024)  # the answer is not used; read a little so the connection ends cleanly
        status = response.status
    except TimeoutError:
        raise SendError(f"{where} did not answer within {timeout:g}s") from None
    except ConnectionRefusedError:
        raise SendError(f"{where} refused the connection") from None
    except ssl.SSLError as exc:
        raise SendError(f"{where}: TLS failed ({exc.reason or type(exc).__name__})") from None
    except (OSError, http.client.HTTPException) as exc:
        raise SendError(f"{where}: {type(exc).__name__}: {_scrub(str(exc), None, url)}"[:400]) from None
    finally:
        connection.close()
    if not 200 <= status < 300:
        raise SendError(f"{where} answered HTTP {status}", status=status)
    return status


def _scrub(text: str, channel=None, url: str = "") -> str:
    """Take out anything secret a library's message might quote."""
    for secret in (url, urlsplit(url).path if url else "", getattr(channel, "url", ""), getattr(channel, "secret", "")):
        if secret and len(secret) > 1:
            text = text.replace(secret, "•••")
    return text


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
