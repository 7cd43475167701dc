"""Approval gates (SPEC §5, `approve:`): a tool call a recipe names waits for a person.

Patterns, one per `approve:` entry:

- `click` — every call of that tool;
- `click:Publish*` — calls whose subject matches the glob, case-insensitively. A click's
  subjects are the selector or text it was given and the element's own visible text, value
  and accessible name, so `click:Publish*` also catches `click {"selector": "#go"}` on a
  button that reads "Publish"; a navigation's subject is the URL it would open; other tools
  match against their text arguments.

The engine asks `gate()`, then records the request and waits (`wait()`) polling the
database, so any web server or CLI can answer from any process.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from budgets.units import format_duration
from runs import events
from runs.models import Approval, ApprovalState, Run, RunState

POLL_SECONDS = 0.5


def gate(patterns: tuple[str, ...] | list[str], tool: str, subjects: list[str]) -> tuple[str, str] | None:
    """(the pattern, what it matched) for the first `approve:` entry that holds this call."""
    for pattern in patterns:
        name, _, glob = pattern.partition(":")
        if name.strip() != tool:
            continue
        glob = glob.strip()
        if not glob:
            return pattern, ""
        for subject in subjects:
            if fnmatch.fnmatchcase(subject.strip().lower(), glob.lower()):
                return pattern, subject.strip()
    return None


def request(
    run: Run, *, pass_number: int, step_number: int, call: dict, pattern: str, subject: str, timeout_seconds: int
) -> Approval:
    """Record the request and put the run in `awaiting approval`."""
    with transaction.atomic():
        approval = Approval.objects.create(
            run=run,
            pass_number=pass_number,
            step_number=step_number,
            tool_name=call["name"],
            tool_input=call.get("input") or {},
            pattern=pattern,
            subject=subject[:500],
            expires_at=timezone.now() + timedelta(seconds=timeout_seconds),
        )
        Run.objects.filter(pk=run.pk, state=RunState.RUNNING).update(state=RunState.AWAITING_APPROVAL)
    run.state = RunState.AWAITING_APPROVAL
    what = f" ({subject!r} matches {pattern})" if subject else f" ({pattern})"
    events.record(
        run,
        "approval.requested",
        f"awaiting approval #{approval.pk}: {approval.action_text}{what}; answer with "
        f"`auto {run.kind} approve|reject #{run.pk} [REASON]` or on the run page, within "
        f"{format_duration(timeout_seconds)}",
        approval=approval.pk,
    )
    return approval


def wait(approval: Approval, *, interrupted: Callable[[], str | None], poll: float = POLL_SECONDS) -> Approval:
    """Block until the approval is answered, expires, or `interrupted()` names a reason
    (a cancel, a stop); then the run is `running` again. Returns the settled approval."""
    while True:
        approval.refresh_from_db()
        if approval.state != ApprovalState.PENDING:
            break
        if timezone.now() >= approval.expires_at:
            settle(approval, ApprovalState.EXPIRED, "nobody answered in time (the approval timed out)")
            break
        reason = interrupted()
        if reason:
            settle(approval, ApprovalState.CANCELLED, reason)
            break
        time.sleep(poll)
    approval.refresh_from_db()
    Run.objects.filter(pk=approval.run_id, state=RunState.AWAITING_APPROVAL).update(state=RunState.RUNNING)
    return approval


def settle(approval: Approval, state: str, reason: str, user=None) -> bool:
    """pending -> answered, once: of two people answering at once, the first wins."""
    done = (
        Approval.objects.filter(pk=approval.pk, state=ApprovalState.PENDING).update(
            state=state, reason=reason, answered_by=user, answered_at=timezone.now()
        )
        == 1
    )
    if done:
        approval.refresh_from_db()
        who = f" by {user}" if user is not None else ""
        label = {
            ApprovalState.APPROVED: "approved",
            ApprovalState.REJECTED: "rejected",
            ApprovalState.EXPIRED: "not answered in time",
            ApprovalState.CANCELLED: "withdrawn",
        }[state]
        events.record(
            approval.run,
            "approval.answered",
            f"approval #{approval.pk} {label}{who}" + (f": {reason}" if reason else ""),
            approval=approval.pk,
            state=state,
        )
    return done


def result_text(approval: Approval) -> str:
    """What the model hears when the action was not taken."""
    if approval.state == ApprovalState.REJECTED:
        return f"not done: a person rejected this action. Their reason: {approval.reason or '(none given)'}"
    if approval.state == ApprovalState.EXPIRED:
        return "not done: this action needs a person's approval and nobody answered in time"
    return f"not done: {approval.reason}"
