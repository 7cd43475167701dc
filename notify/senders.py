"""How a Notice leaves: a signed JSON POST, a Slack message, an email. One attempt each;
retries are services' business. Errors are classes ("connection refused", "timed out",
"refused: private address", "HTTP 500") and the host and port: a URL's path, query or user
part (where Slack and most webhooks keep their secret), the HMAC secret and a library's own
text never appear in them.

Only http and https, redirects are not followed, and internal addresses are refused unless an
admin allows the host by name (notify/transport.py says which and why).
"""

from __future__ import annotations

import base64
import errno
import hashlib
import hmac
import http.client
import json
import smtplib
import socket
import ssl
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail

from notify.events import Notice, one_line
from notify.models import MIN_SECRET_BYTES
from notify.transport import AddressRefused, BadURL, Deadline, Target, guarded_connector, parse_url

SUBJECT_MAX = 150  # characters of an email subject
SIGNATURE_HEADER = "X-Rysh-Signature"  # the body alone, kept for receivers written before the three below


class SendError(Exception):
    """An attempt failed; the message is safe to show and store."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Sent:
    status: int | None  # HTTP status; None for email


def signature(secret: str, body: bytes) -> str:
    """`sha256=<hex>`: HMAC-SHA256 of the exact body bytes, keyed with the channel's secret.
    It has no time in it, so a captured delivery verifies forever: `standard_signature` does."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64>`: HMAC-SHA256 of `id.timestamp.body` keyed with the secret's UTF-8 bytes,
    the Standard Webhooks way. A receiver that refuses old timestamps refuses replays."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()


def webhook_body(notice: Notice, delivery_id: int) -> bytes:
    return json.dumps({"delivery": delivery_id, **notice.as_dict()}, sort_keys=True).encode()


def send_webhook(channel, notice: Notice, delivery_id: int) -> Sent:
    """The body is the same on every attempt; the timestamp, and so the signature, are new."""
    if len(channel.secret.encode()) < MIN_SECRET_BYTES:  # saved before the minimum
        raise SendError(
            f"refused: the signing secret is shorter than {MIN_SECRET_BYTES} bytes; an admin saves the channel "
            "with a new one (a blank secret field generates one) and gives it to the receiver"
        )
    body = webhook_body(notice, delivery_id)
    message_id, timestamp = str(delivery_id), int(time.time())
    headers = {
        "X-Rysh-Event": notice.event,
        "X-Rysh-Delivery": str(delivery_id),
        SIGNATURE_HEADER: signature(channel.secret, body),
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(channel.secret, message_id, timestamp, body),
    }
    return Sent(post_json(channel.url, body, headers))


def slack_message(notice: Notice) -> dict:
    """Slack's incoming-webhook format: `text` (the fallback: notifications, and clients that
    show no blocks) and a section block with the link as `<url|label>`. Every text, the fallback
    included, has &, < and > escaped as Slack asks: a run's cause or a change's title could
    otherwise say `<!channel>` or forge a link (`<http://evil|run #7>`)."""
    title, link = _slack_escape(notice.title), _slack_escape(notice.link)
    lines = "\n".join(_slack_escape(line) for line in notice.lines)
    return {
        "text": f"{title} {link}",
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": f"*{title}*\n{lines}\n<{link}|{_slack_escape(notice.link_label)}>"},
            }
        ],
    }


def send_slack(channel, notice: Notice, delivery_id: int) -> Sent:
    return Sent(post_json(channel.url, json.dumps(slack_message(notice)).encode(), {}))


def send_email(channel, notice: Notice, delivery_id: int) -> Sent:
    if not channel.recipient_list:
        raise SendError("the channel has no recipients")
    try:
        send_mail(
            # one line, whatever the title says: a newline in a header is refused (BadHeaderError)
            subject=one_line(f"[rysh] {notice.title}", SUBJECT_MAX),
            message=f"{notice.text}\n\n{notice.link_label}: {notice.link}\n",
            from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=channel.recipient_list,
        )
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
        raise SendError(f"email not sent: {_email_error_class(exc)}") from None
    return Sent(None)


def _email_error_class(exc: Exception) -> str:
    """The class of a failed send (`SMTP 550`, `connection refused`), never the server's text."""
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"SMTP {exc.smtp_code}"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "recipients refused"
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        return "connection lost"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "host not found"
    if isinstance(exc, ssl.SSLError):
        return "TLS failed"
    return type(exc).__name__


SENDERS = {"webhook": send_webhook, "slack": send_slack, "email": send_email}


def post_json(url: str, body: bytes, headers: dict, timeout: float | None = None) -> int:
    """POST, return the status for a 2xx; SendError for anything else, saying its class and
    where (`connection refused (hooks.example:443)`), never a library's text.

    One deadline (`timeout`, else RYSH_NOTIFY_TIMEOUT seconds) for the whole attempt: the
    lookup, the connection, sending and reading the answer. A receiver that hangs or drips
    costs a worker that long, never a run anything."""
    timeout = timeout or settings.RYSH_NOTIFY_TIMEOUT
    try:
        target = parse_url(url)
    except BadURL as exc:  # stored before URLs were checked as a whole
        raise SendError(f"bad URL: {exc}; an admin saves the channel's URL again") from None
    if target.scheme == "https":
        connection = http.client.HTTPSConnection(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
    with Deadline(timeout) as deadline:
        # resolve, check, connect to what was checked, all on the deadline's clock
        connection._create_connection = guarded_connector(target, deadline)
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
        except (AddressRefused, OSError, http.client.HTTPException) as exc:
            # past the deadline, whatever the cut connection raised is a timeout
            raise SendError(error_class(TimeoutError() if deadline.expired else exc, target, timeout)) from None
        finally:
            connection.close()
        if deadline.expired:  # the answer was cut short
            raise SendError(error_class(TimeoutError(), target, timeout))
    if not 200 <= status < 300:
        raise SendError(f"HTTP {status} ({target.where})", status=status)
    return status


def error_class(exc: BaseException, target: Target, timeout: float) -> str:
    """What went wrong, as a class an operator can act on, and where (host:port). Never the
    exception's text: it may quote the URL's path and query, and raw socket errors for any
    address and port would make the delivery log a port scanner's report."""
    where = target.where
    if isinstance(exc, AddressRefused):
        return (
            f"refused: private address ({where} is {exc}; an admin may allow {target.host} in RYSH_NOTIFY_ALLOW_HOSTS)"
        )
    if isinstance(exc, TimeoutError):
        return f"timed out ({where}, {timeout:g}s)"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused ({where})"
    if isinstance(exc, socket.gaierror):
        return f"host not found ({target.host})"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS failed: certificate not trusted ({where})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({where})"
    if isinstance(exc, ConnectionError):  # reset, aborted, closed without an answer
        return f"connection lost ({where})"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({where})"
    code = errno.errorcode.get(exc.errno, "") if isinstance(exc, OSError) and exc.errno else ""
    return f"connection failed{f': {code}' if code else ''} ({where})"


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
