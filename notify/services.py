"""Notifications: which channels get an event, the deliveries queued for them, and one
delivery attempt with its retry.

- `notify()` writes a Delivery per channel that gets the event (channels subscribed to it,
  plus the channels the recipe's `notify:` names for it) in the caller's transaction, and
  queues `notify.tasks.deliver` on django-q2 only after that transaction commits. A run never
  sends anything itself, so a slow or dead receiver cannot slow it.
- `deliver()` makes one attempt on a worker (RYSH_NOTIFY_TIMEOUT seconds in all, 10 by
  default: notify.senders.post_json). On failure (non-2xx, timeout, refused) the next attempt
  is a django-q2 ONCE schedule after 30 s, 2 min, 10 min, 1 h; after 5 attempts the delivery
  is failed. Each attempt is a row the log page shows.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterable
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, schedule

from audit.services import audit_record
from catalogue.recipe import NAME_RE
from notify import events, transport
from notify.events import Notice
from notify.models import MIN_SECRET_BYTES, TAKES_TO, Attempt, Channel, ChannelKind, Delivery, DeliveryState, Once
from notify.senders import SENDERS, SendError

log = logging.getLogger(__name__)

DELIVER_FUNC = "notify.tasks.deliver"  # queued by path
BACKOFF_SECONDS = (30, 120, 600, 3600)  # after attempts 1, 2, 3, 4
MAX_ATTEMPTS = len(BACKOFF_SECONDS) + 1


class ChannelError(ValueError):
    """A channel that cannot be saved; the message says what to fix, `field` which field
    (the form shows it there), or None for the form as a whole."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


# -- queuing ------------------------------------------------------------------------------------


def notify(notice: Notice, *, rules: Iterable[dict] = ()) -> list[Delivery]:
    """Queue `notice` for every enabled channel that gets its event. `rules` are the recipe's
    `notify:` entries ({channel, events, to}) when the event is about a recipe; a rule's `to`
    replaces the channel's recipients for its delivery (one delivery a channel still)."""
    rules = [rule for rule in rules if notice.event in (rule.get("events") or ())]
    named = {rule.get("channel") for rule in rules}
    to = {rule["channel"]: rule["to"] for rule in rules if rule.get("to")}
    wanted = [
        channel
        for channel in Channel.objects.filter(enabled=True)
        if notice.event in (channel.events or []) or channel.name in named
    ]
    return [queue(channel, notice, to=to.get(channel.name) if channel.kind in TAKES_TO else None) for channel in wanted]


def notify_once(key: str, notice: Notice, *, rules: Iterable[dict] = ()) -> list[Delivery]:
    """notify() the first time `key` is seen, nothing after (budget thresholds)."""
    if not claim_once(key):
        return []
    return notify(notice, rules=rules)


def claim_once(key: str) -> bool:
    """The unique insert is the claim: of two workers (or a step settled twice) one wins."""
    try:
        with transaction.atomic():
            Once.objects.create(key=key[:200])
    except IntegrityError:
        return False
    return True


def queue(channel: Channel, notice: Notice, *, to: str | None = None) -> Delivery:
    delivery = Delivery.objects.create(channel=channel, event=notice.event, payload=notice.as_dict(), to=to or "")
    transaction.on_commit(lambda: enqueue(delivery.pk))
    return delivery


def enqueue(delivery_id: int) -> None:
    try:
        async_task(DELIVER_FUNC, delivery_id, task_name=f"notify-{delivery_id}", group="notify")
    except Exception:  # a broker that is down must not fail what caused the event
        log.exception("delivery #%s could not be queued", delivery_id)


# -- one attempt --------------------------------------------------------------------------------


def deliver(delivery_id: int) -> str:
    """One attempt at a pending delivery; a failure schedules the next one (or gives up)."""
    delivery = Delivery.objects.filter(pk=delivery_id).select_related("channel").first()
    if delivery is None or delivery.state != DeliveryState.PENDING:
        return f"delivery #{delivery_id}: nothing to do"
    number = delivery.attempts + 1
    # the claim: two workers handed the same delivery (a retry and a re-queue) send it once
    if not Delivery.objects.filter(pk=delivery.pk, state=DeliveryState.PENDING, attempts=delivery.attempts).update(
        attempts=number
    ):
        return f"delivery #{delivery_id}: another worker has it"
    started = time.monotonic()
    channel = delivery.channel
    if delivery.to:  # the recipe's own recipients, for this delivery only: the channel is not saved
        channel.recipients = delivery.to
    try:
        sent = SENDERS[channel.kind](channel, Notice.from_dict(delivery.payload), delivery.pk)
    except SendError as exc:
        return _failed(delivery, number, str(exc), exc.status, time.monotonic() - started)
    except Exception as exc:  # a bug in a sender is a failed attempt, logged, not a lost delivery
        log.exception("delivery #%s", delivery.pk)
        return _failed(delivery, number, f"{type(exc).__name__}", None, time.monotonic() - started)
    Attempt.objects.create(
        delivery=delivery, number=number, ok=True, status=sent.status, seconds=time.monotonic() - started
    )
    Delivery.objects.filter(pk=delivery.pk).update(
        state=DeliveryState.SENT, last_status=sent.status, last_error="", next_attempt_at=None, sent_at=timezone.now()
    )
    return f"delivery #{delivery.pk} sent ({delivery.event} -> {delivery.channel.name})"


def _failed(delivery: Delivery, number: int, error: str, status: int | None, seconds: float) -> str:
    error = error[:500]
    Attempt.objects.create(delivery=delivery, number=number, ok=False, status=status, error=error, seconds=seconds)
    if number >= MAX_ATTEMPTS:
        Delivery.objects.filter(pk=delivery.pk).update(
            state=DeliveryState.FAILED, last_status=status, last_error=error, next_attempt_at=None
        )
        return f"delivery #{delivery.pk} failed after {number} attempts: {error}"
    when = timezone.now() + timedelta(seconds=BACKOFF_SECONDS[number - 1])
    Delivery.objects.filter(pk=delivery.pk).update(last_status=status, last_error=error, next_attempt_at=when)
    try:
        schedule(
            DELIVER_FUNC,
            delivery.pk,
            name=f"notify-{delivery.pk}-{number + 1}",
            schedule_type=Schedule.ONCE,
            next_run=when,
        )
    except IntegrityError:  # that attempt is already scheduled (django-q2 refuses a second name)
        pass
    return f"delivery #{delivery.pk} attempt {number} failed ({error}); next at {when:%H:%M:%S}"


# -- channels -----------------------------------------------------------------------------------


def channel_save(
    *,
    user,
    name: str,
    kind: str,
    url: str = "",
    secret: str = "",
    recipients: str = "",
    events_wanted: Iterable[str] = (),
    enabled: bool = True,
    channel: Channel | None = None,
) -> tuple[Channel, str]:
    """Create or update a channel; (the channel, a newly generated secret to show once, or "").

    A blank URL or secret keeps the saved one: the form never shows them back (a saved secret
    shorter than MIN_SECRET_BYTES is replaced by a generated one)."""
    name = name.strip()
    if not NAME_RE.match(name) or len(name) > 60:
        raise ChannelError(
            f"{name!r}: a channel name is lowercase letters, digits, '.', '_' or '-' "
            "(at most 60), starting with a letter or digit — recipes name it in notify:"
        )
    if kind not in ChannelKind.values:
        raise ChannelError(f"kind must be one of {', '.join(ChannelKind.values)}")
    if Channel.objects.filter(name=name).exclude(pk=getattr(channel, "pk", None)).exists():
        raise ChannelError(f"a channel named {name!r} already exists")
    unknown = [e for e in events_wanted if e not in events.EVENTS or e == events.TEST]
    if unknown:
        raise ChannelError(f"unknown events: {', '.join(unknown)}")
    row = channel or Channel(created_by=user)
    url = url.strip()
    if kind in (ChannelKind.WEBHOOK, ChannelKind.SLACK):
        if url:
            row.url = check_url(url)
        elif not row.url or row.kind != kind:
            raise ChannelError("a webhook or Slack channel needs its URL", field="url")
    else:
        row.url = ""
    shown_secret = ""
    if kind == ChannelKind.WEBHOOK:
        if secret.strip():
            row.secret = check_secret(secret.strip())
        elif len(row.secret.encode()) < MIN_SECRET_BYTES:
            # none yet, or one saved before the minimum (its deliveries are refused: nothing
            # that works can break): a blank field generates one, shown once
            row.secret = shown_secret = secrets.token_hex(32)
    else:
        row.secret = ""
    if kind == ChannelKind.EMAIL:
        row.recipients = check_recipients(recipients)
    else:
        row.recipients = ""
    row.name, row.kind, row.enabled = name, kind, enabled
    row.events = [e for e in events.NOTIFY_EVENTS if e in set(events_wanted)]
    adding = row.pk is None
    row.save()
    # never the URL or the secret: who changed which channel, its kind, events and state
    audit_record(
        actor=user,
        action="notify.channel.add" if adding else "notify.channel.change",
        target=("channel", row.pk, f"channel {row.name}"),
        detail={"kind": row.kind, "events": row.events, "enabled": row.enabled},
    )
    return row, shown_secret


def channel_delete(*, channel: Channel, user) -> str:
    name, pk = channel.name, channel.pk
    channel.delete()
    audit_record(actor=user, action="notify.channel.remove", target=("channel", pk, f"channel {name}"))
    return f"channel {name} deleted (recipes that name it in notify: are now errors)"


def check_url(url: str) -> str:
    """The URL as a whole (notify.transport.parse_url): scheme, host, port, no user part, no
    spaces; a URL that passes here never makes a page or a delivery fail on its form. A host
    written as an internal address is refused here; a name, at each delivery once resolved."""
    try:
        target = transport.parse_url(url)
    except transport.BadURL as exc:
        raise ChannelError(str(exc), field="url") from None
    if why := transport.refused_without_dns(target):
        raise ChannelError(
            f"{target.host} is {why}: notifications go to public addresses only, unless an admin "
            f"allows the host by name in RYSH_NOTIFY_ALLOW_HOSTS",
            field="url",
        )
    return url


def check_secret(secret: str) -> str:
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise ChannelError(
            f"the signing secret must be at least {MIN_SECRET_BYTES} bytes (this one has "
            f"{len(secret.encode())}): a short one can be guessed from a signature; leave the field "
            "blank to have one generated",
            field="secret",
        )
    return secret


def check_recipients(text: str) -> str:
    addresses = [a.strip() for a in text.replace(";", ",").replace("\n", ",").split(",") if a.strip()]
    if not addresses:
        raise ChannelError("an email channel needs at least one recipient", field="recipients")
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            raise ChannelError(f"{address!r} is not an email address", field="recipients") from None
    return ", ".join(addresses)


def channel_test(*, channel: Channel) -> Delivery:
    """The "Send test" button: a `test` delivery, queued like any other."""
    return queue(channel, events.test(channel))
