"""Channels a team configures once (admins), the deliveries queued for them, each attempt.

Secrets (webhook and Slack URLs, HMAC secrets) are stored to be used, and never shown back
in full: pages read `url_masked` and `secret_masked`.
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from catalogue.recipe import NAME_RE
from notify.transport import BadURL, parse_url
from rysh_site.models import Stamped

MASK = "••••"
# A webhook's signing secret: at least this many bytes (the Standard Webhooks convention's
# floor), so a captured signature cannot be turned back into the secret by guessing.
MIN_SECRET_BYTES = 24


class ChannelKind(models.TextChoices):
    WEBHOOK = "webhook", "webhook (JSON, signed)"
    SLACK = "slack", "Slack incoming webhook"
    EMAIL = "email", "email"


# the kinds whose recipients a recipe's `notify:` `to:` may replace (docs/notifications.md)
TAKES_TO = (ChannelKind.EMAIL,)


class Channel(Stamped):
    # the name a recipe's `notify:` uses: the same words as recipe names
    name = models.CharField(
        max_length=60,
        unique=True,
        validators=[
            RegexValidator(NAME_RE, "lowercase letters, digits, '.', '_' or '-', starting with a letter or digit")
        ],
    )
    kind = models.CharField(max_length=10, choices=ChannelKind.choices)
    url = models.CharField(max_length=2000, blank=True)  # webhook / Slack: a secret in itself
    secret = models.CharField(max_length=200, blank=True)  # webhook: the HMAC-SHA256 key
    recipients = models.TextField(blank=True)  # email: addresses, comma-separated
    events = models.JSONField(default=list)  # the event codes this channel always gets
    enabled = models.BooleanField(default=True)
    # created_by, created_at, updated_at: Stamped (rysh_site/models.py)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def url_masked(self) -> str:
        """`https://hooks.slack.com/…/•••• (saved)`: the host, never the path or query."""
        if not self.url:
            return ""
        try:
            target = parse_url(self.url)
        except BadURL:  # saved before URLs were checked as a whole (a port of 99999): say so, never fail
            return f"{MASK} (saved, not a valid URL: save a new one)"
        return f"{target.scheme}://{target.netloc}/…/{MASK} (saved)"

    @property
    def secret_masked(self) -> str:
        return f"{MASK}{MASK} (saved)" if self.secret else ""

    @property
    def secret_too_short(self) -> bool:
        """A webhook secret saved before the minimum: its deliveries are refused until an admin
        sets a new one (notify.senders.send_webhook)."""
        return self.kind == ChannelKind.WEBHOOK and len(self.secret.encode()) < MIN_SECRET_BYTES

    @property
    def recipient_list(self) -> list[str]:
        return [a.strip() for a in self.recipients.split(",") if a.strip()]


class DeliveryState(models.TextChoices):
    PENDING = "pending"  # queued, or waiting for its next attempt
    SENT = "sent"
    FAILED = "failed"  # every attempt failed


class Delivery(models.Model):
    """One event for one channel; written in the same transaction as what caused it."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)  # notify.events.Notice.as_dict()
    # a recipe's `notify:` `to:`: the recipients this delivery goes to instead of the channel's
    to = models.CharField(max_length=500, blank=True)
    state = models.CharField(max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    last_status = models.PositiveIntegerField(null=True, blank=True)  # the receiver's HTTP status
    last_error = models.CharField(max_length=500, blank=True)  # redacted: no URL path, query or secret
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"delivery #{self.pk} {self.event} -> {self.channel.name}"


class Attempt(models.Model):
    """One try at a delivery: the delivery log shows each."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveIntegerField()
    ok = models.BooleanField(default=False)
    status = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="notify_attempt_number_unique")]


class Once(models.Model):
    """A key that may be acted on once (`run:12:budget.80`): the unique insert is the claim,
    so a retried step or a second worker cannot announce the same threshold twice."""

    key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
