"""The push hook: a forge says the recipes repository moved, and the catalogue syncs at once.

GitHub, GitLab, Gitea and Forgejo each call `/hooks/git/` with the shared secret
RYSH_GIT_HOOK_SECRET: GitHub, Gitea and Forgejo sign the body (hex HMAC-SHA256), GitLab sends
the secret itself. Both are compared in constant time, over the exact bytes received, before a
byte of the body is parsed. Every request leaves a GitDelivery row saying what became of it.

The sync runs in the request: an incremental sync after a push reads only the files the push
touched (tens of milliseconds, plus a fetch for a clone URL), well inside a forge's ~10 s
timeout, whereas a queued task waits for a free worker, and a worker is held by a run's pass for
the pass's whole length. The minute's poll (catalogue.tasks) stays as the fallback for a missed
or refused delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import audit_record
from catalogue.models import GitDelivery
from catalogue.repo import RepoError, redact
from catalogue.sync import recipes_sync

MAX_BODY = 1024 * 1024  # a push's JSON is a few KB; GitHub sends at most 25 MB, and we read none of that
KEEP = 500  # deliveries kept; older ones are deleted as new ones arrive
PUSH_EVENTS = {"push", "Push Hook"}  # GitHub, Gitea and Forgejo; GitLab


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
    """What the forge is told, and the row that says the same to admins."""

    status: int
    delivery: GitDelivery

    def body(self) -> dict:
        d = self.delivery
        return {"delivery": d.pk, "outcome": d.outcome, "reason": d.reason} | ({"sync": d.sync} if d.sync else {})


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
    row = GitDelivery(
        received_at=timezone.now(),
        forge=forge.name if forge else "",
        event=headers.get(forge.event_header, "")[:100] if forge else "",
        delivery_id=_delivery_id(forge, headers),
        address=address,
    )
    secret = settings.RYSH_GIT_HOOK_SECRET
    if not secret:
        return _refuse(row, 503, "the push hook is off (RYSH_GIT_HOOK_SECRET is not set)")
    if body is None:
        return _refuse(row, 413, f"body over {MAX_BODY >> 20} MiB")
    if forge is None:
        return _refuse(row, 401, "unsigned: no X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event or X-Forgejo-Event")
    if problem := signature_problem(forge, headers, body, secret):
        return _refuse(row, 401, problem)
    # signed from here on
    if row.event not in PUSH_EVENTS:
        return _settle(row, GitDelivery.IGNORED, f"{row.event} event")
    try:
        ref = json.loads(body).get("ref")
    except (ValueError, AttributeError):
        return _refuse(row, 400, "the body is not a JSON object (set the content type to application/json)")
    row.ref = str(ref or "")[:300]
    tracked = settings.RYSH_RECIPES_BRANCH
    if row.ref != f"refs/heads/{tracked}":
        return _settle(row, GitDelivery.IGNORED, f"push to {row.ref.removeprefix('refs/heads/')}, syncing {tracked}")
    answer = _settle(row, GitDelivery.ACCEPTED, f"push to {tracked}")
    if answer.delivery.duplicate_of is None:
        return _sync(answer.delivery)
    return answer


def _delivery_id(forge: Forge | None, headers: Mapping[str, str]) -> str:
    if forge is None:
        return ""
    return next((headers[h] for h in forge.delivery_headers if headers.get(h)), "")[:100]


def _refuse(row: GitDelivery, status: int, reason: str) -> Answer:
    """Refused rows claim no delivery id: an unsigned request cannot block a real one."""
    row.outcome, row.reason, row.status = GitDelivery.REFUSED, reason, status
    row.save()
    _prune()
    return Answer(status, row)


def _settle(row: GitDelivery, outcome: str, reason: str) -> Answer:
    """Save a signed delivery, claiming its id; a redelivery of a claimed id is a duplicate."""
    row.outcome, row.reason, row.status = outcome, reason, 200
    for _attempt in range(3):
        try:
            with transaction.atomic():
                row.save(force_insert=True)
            _prune()
            return Answer(200, row)
        except IntegrityError:
            row.pk = None
            first = _claimant(row)
            if first is not None:
                row.outcome, row.reason, row.duplicate_of = GitDelivery.IGNORED, f"duplicate of #{first}", first
                row.save()
                return Answer(200, row)
    raise RuntimeError(f"delivery {row.delivery_id}: its id neither saves nor is found")


def _claimant(row: GitDelivery) -> int | None:
    """The delivery holding `row`'s id (None if it let go meanwhile: its sync failed)."""
    claimed = GitDelivery.objects.filter(
        forge=row.forge, delivery_id=row.delivery_id, outcome__in=[GitDelivery.ACCEPTED, GitDelivery.IGNORED]
    )
    return claimed.filter(duplicate_of=None).values_list("pk", flat=True).first()


def _sync(row: GitDelivery) -> Answer:
    target = ("repo", "", redact(settings.RYSH_RECIPES_REPO))
    try:
        result = recipes_sync()
    except RepoError as exc:
        # a failed sync lets go of the delivery id: redelivering it from the forge tries again
        _update(row, outcome=GitDelivery.FAILED, status=502, sync=f"sync failed: {redact(str(exc))}"[:500])
        audit_record(action="recipes.sync", target=target, detail={"via": f"push hook #{row.pk}", "error": row.sync})
        return Answer(502, row)
    except Exception:
        _update(row, outcome=GitDelivery.FAILED, status=500, sync="sync failed: internal error (see the server log)")
        raise
    _update(row, sync=result.line())
    audit_record(
        action="recipes.sync",
        target=target,
        detail={"via": f"push hook #{row.pk}", "head": result.head[:12], "changed": result.changed},
    )
    return Answer(200, row)


def _update(row: GitDelivery, **fields) -> None:
    for name, value in fields.items():
        setattr(row, name, value)
    GitDelivery.objects.filter(pk=row.pk).update(**fields)


def _prune() -> None:
    oldest_kept = list(GitDelivery.objects.order_by("-id").values_list("id", flat=True)[KEEP - 1 : KEEP])
    if oldest_kept:
        GitDelivery.objects.filter(id__lt=oldest_kept[0]).delete()
