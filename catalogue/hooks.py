"""The push hook: a forge says the recipes repository moved, and the catalogue syncs soon after.

GitHub, GitLab, Gitea and Forgejo each call `/hooks/git/` with the shared secret
RYSH_GIT_HOOK_SECRET: GitHub, Gitea and Forgejo sign the body (hex HMAC-SHA256), GitLab sends
the secret itself. Both are compared in constant time, over the exact bytes received, before a
byte of the body is parsed.

What is kept: a signed request is a GitDelivery row (the last KEEP); a request refused before
anything in it was trusted — the hook off, a body too large, unsigned or badly signed — and a
signed body seen again within the hour are only counted, per day and reason (GitHookRefusal),
so no flood of them can push a real delivery out of the log.

Replays: the delivery id is not signed, so a captured signed push could be sent again under a
fresh id. A body (its SHA-256) accepted or ignored within REPLAY_WINDOW is refused under another
id (409) and a duplicate under its own; older than that, it only syncs the configured repository
again, which changes nothing.

The sync runs on a worker: an accepted push queues `catalogue.tasks.hook_sync` once the row is
committed and answers 202 at once; the task writes the sync's line (or its error) on the row.
The minute's poll (catalogue.tasks) stays as the fallback for a missed or refused delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django_q.tasks import async_task

from catalogue.models import GitDelivery, GitHookRefusal

MAX_BODY = 1024 * 1024  # a push's JSON is a few KB; GitHub sends at most 25 MB, and we read none of that
KEEP = 500  # deliveries kept; older ones are deleted as new ones arrive
REFUSALS_KEPT_DAYS = 30  # the refusal counters' days kept
REPLAY_WINDOW = timedelta(hours=1)
PUSH_EVENTS = {"push", "Push Hook"}  # GitHub, Gitea and Forgejo; GitLab
SYNC_FUNC = "catalogue.tasks.hook_sync"
QUEUED = "queued"  # the sync line of an accepted delivery until a worker ran its sync


@dataclass(frozen=True)
class Forge:
    name: str
    event_header: str
    delivery_headers: tuple[str, ...]  # the first one present is the delivery id
    signature_header: str
    prefix: str = ""  # what the signature header's value starts with, before the hex
    token: bool = False  # the header carries the secret itself (GitLab), not a signature


# Gitea and Forgejo send GitHub's headers too (and Forgejo Gitea's), so their own come first.
FORGES = (
    Forge("forgejo", "X-Forgejo-Event", ("X-Forgejo-Delivery",), "X-Forgejo-Signature"),
    Forge("gitea", "X-Gitea-Event", ("X-Gitea-Delivery",), "X-Gitea-Signature"),
    # Idempotency-Key (GitLab 17.4+) is kept across retries; X-Gitlab-Event-UUID before it
    Forge("gitlab", "X-Gitlab-Event", ("Idempotency-Key", "X-Gitlab-Event-UUID"), "X-Gitlab-Token", token=True),
    Forge("github", "X-GitHub-Event", ("X-GitHub-Delivery",), "X-Hub-Signature-256", prefix="sha256="),
)


@dataclass(frozen=True)
class Answer:
    """What the forge is told; `delivery` is the signed request's row (None: only counted)."""

    status: int
    outcome: str
    reason: str
    delivery: GitDelivery | None = None

    def body(self) -> dict:
        d = self.delivery
        said = {"outcome": self.outcome, "reason": self.reason}
        return said if d is None else {"delivery": d.pk, **said} | ({"sync": d.sync} if d.sync else {})


def forge_of(headers: Mapping[str, str]) -> Forge | None:
    return next((f for f in FORGES if f.event_header in headers), None)


def signature_problem(forge: Forge, headers: Mapping[str, str], body: bytes, secret: str) -> str | None:
    """Why the request is not signed with `secret` (None: it is). Never says what was expected."""
    given = headers.get(forge.signature_header, "")
    if not given:
        return f"no {forge.signature_header}"
    if forge.token:
        return None if hmac.compare_digest(given.encode(), secret.encode()) else f"wrong {forge.signature_header}"
    if not given.startswith(forge.prefix):
        return f"{forge.signature_header} is not {forge.prefix}<hex>"
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    good = hmac.compare_digest(given.removeprefix(forge.prefix).strip().lower().encode(), expected.encode())
    return None if good else f"bad signature ({forge.signature_header})"


def git_push_receive(*, headers: Mapping[str, str], body: bytes | None, address: str | None) -> Answer:
    """One request to the hook, start to end. `body` is None when it was over MAX_BODY (not read)."""
    forge = forge_of(headers)
    secret = settings.RYSH_GIT_HOOK_SECRET
    refused = _Refusals(forge.name if forge else "", address)
    if not secret:
        return refused.count(503, "the push hook is off (RYSH_GIT_HOOK_SECRET is not set)")
    if body is None:
        return refused.count(413, f"body over {MAX_BODY >> 20} MiB")
    if forge is None:
        return refused.count(401, "unsigned: no X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event or X-Forgejo-Event")
    if problem := signature_problem(forge, headers, body, secret):
        return refused.count(401, problem)
    # signed from here on
    row = GitDelivery(
        received_at=timezone.now(),
        forge=forge.name,
        event=headers.get(forge.event_header, "")[:100],
        delivery_id=_delivery_id(forge, headers),
        address=address,
        body_sha256=hashlib.sha256(body).hexdigest(),
    )
    if (seen := _seen_within_the_hour(row)) is not None:
        return _seen_again(refused, row, seen)
    if row.event not in PUSH_EVENTS:
        return _settle(row, GitDelivery.IGNORED, f"{row.event} event")
    try:
        ref = json.loads(body).get("ref")
    except (ValueError, AttributeError):
        return _settle(
            row, GitDelivery.REFUSED, "the body is not a JSON object (set the content type to application/json)", 400
        )
    row.ref = str(ref or "")[:300]
    tracked = settings.RYSH_RECIPES_BRANCH
    if row.ref != f"refs/heads/{tracked}":
        return _settle(row, GitDelivery.IGNORED, f"push to {row.ref.removeprefix('refs/heads/')}, syncing {tracked}")
    answer = _settle(row, GitDelivery.ACCEPTED, f"push to {tracked}", 202)
    if answer.delivery.duplicate_of is None:
        _queue_sync(answer.delivery)
    return answer


def _delivery_id(forge: Forge, headers: Mapping[str, str]) -> str:
    return next((headers[h] for h in forge.delivery_headers if headers.get(h)), "")[:100]


class _Refusals:
    """Counts what is refused (or seen again) without storing each request: one row per day,
    forge, reason and status; the reasons are the hook's own words, never the request's."""

    def __init__(self, forge: str, address: str | None):
        self.forge, self.address = forge, address

    def count(self, status: int, reason: str, *, outcome: str = GitDelivery.REFUSED, said: str = "") -> Answer:
        now = timezone.now()
        key = {"day": timezone.localdate(now), "forge": self.forge, "reason": reason[:300], "status": status}
        for _attempt in range(3):
            counters = GitHookRefusal.objects.filter(**key)
            if counters.update(count=F("count") + 1, last_at=now, last_address=self.address):
                break
            try:
                with transaction.atomic():
                    GitHookRefusal.objects.create(**key, count=1, last_at=now, last_address=self.address)
                GitHookRefusal.objects.filter(day__lt=key["day"] - timedelta(days=REFUSALS_KEPT_DAYS)).delete()
                break
            except IntegrityError:
                continue  # another request made the day's row meanwhile: count on it
        return Answer(status, outcome, said or reason)


def _seen_within_the_hour(row: GitDelivery) -> GitDelivery | None:
    """The first delivery of the same body accepted or ignored within REPLAY_WINDOW, if any."""
    return (
        GitDelivery.objects.filter(
            body_sha256=row.body_sha256,
            received_at__gte=row.received_at - REPLAY_WINDOW,
            outcome__in=[GitDelivery.ACCEPTED, GitDelivery.IGNORED],
        )
        .order_by("id")
        .first()
    )


def _seen_again(refused: _Refusals, row: GitDelivery, seen: GitDelivery) -> Answer:
    first = seen.duplicate_of or seen.pk
    if row.delivery_id and (row.forge, row.delivery_id) == (seen.forge, seen.delivery_id):
        return refused.count(
            200,
            "a redelivery of a delivery of the last hour",
            outcome=GitDelivery.IGNORED,
            said=f"duplicate of #{first}",
        )
    return refused.count(
        409,
        "a body delivered within the hour under another delivery id (a replay)",
        said=f"a replay: this body was delivered as #{first} within the hour, under another delivery id",
    )


def _settle(row: GitDelivery, outcome: str, reason: str, status: int = 200) -> Answer:
    """Save a signed delivery, claiming its id; a redelivery of a claimed id is a duplicate."""
    row.outcome, row.reason, row.status = outcome, reason, status
    if outcome == GitDelivery.REFUSED:  # claims no id: a redelivery, fixed at the forge, goes through
        row.save()
        _prune()
        return Answer(status, outcome, reason, row)
    for _attempt in range(3):
        try:
            with transaction.atomic():
                row.save(force_insert=True)
            _prune()
            return Answer(status, outcome, reason, row)
        except IntegrityError:
            row.pk = None
            first = _claimant(row)
            if first is not None:
                row.outcome, row.reason, row.duplicate_of, row.status = (
                    GitDelivery.IGNORED,
                    f"duplicate of #{first}",
                    first,
                    200,
                )
                row.save()
                return Answer(200, row.outcome, row.reason, row)
    raise RuntimeError(f"delivery {row.delivery_id}: its id neither saves nor is found")


def _claimant(row: GitDelivery) -> int | None:
    """The delivery holding `row`'s id (None if it let go meanwhile: its sync failed)."""
    claimed = GitDelivery.objects.filter(
        forge=row.forge, delivery_id=row.delivery_id, outcome__in=[GitDelivery.ACCEPTED, GitDelivery.IGNORED]
    )
    return claimed.filter(duplicate_of=None).values_list("pk", flat=True).first()


def _queue_sync(row: GitDelivery) -> None:
    """The sync runs on a worker, once the row it reports on is committed."""
    GitDelivery.objects.filter(pk=row.pk).update(sync=QUEUED)
    row.sync = QUEUED
    transaction.on_commit(lambda: async_task(SYNC_FUNC, row.pk, task_name=f"hook-sync-{row.pk}", group="sync"))


def _prune() -> None:
    oldest_kept = list(GitDelivery.objects.order_by("-id").values_list("id", flat=True)[KEEP - 1 : KEEP])
    if oldest_kept:
        GitDelivery.objects.filter(id__lt=oldest_kept[0]).delete()
