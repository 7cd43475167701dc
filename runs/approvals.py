"""Approval gates (docs/approvals.md, `approve:`): a tool call a recipe names waits for a person.

Patterns, one per `approve:` entry:

- `click` — every call of that tool;
- `click:Publish*` — calls whose subject matches the glob, case-insensitively. A click's
  subjects are the selector or text it was given and the element's own visible text, value
  and accessible name, so `click:Publish*` also catches `click {"selector": "#go"}` on a
  button that reads "Publish"; a navigation's subject is the URL it would open; other tools
  match against their text arguments.

- `bash(git push:*)` — a command pattern in the form coding agents use: commands that start
  with `git push`, as a shell parser reads each simple command of the line (wrappers, quotes,
  paths and git's global options peeled off: agents/shell_commands.py); `bash(make deploy)`
  holds exactly that command. A command line the parser cannot reduce (`eval`, a variable as
  the command's name, a shell reading its input…) is held by every pattern of its tool: fail
  closed.

A call is also gated as what it amounts to (a tools port's `approval_equivalents`): the
browser's Enter or Space on a button is a `click` on it, Enter in a form's field a click on
its submit button, a click on a link a `navigate` to its URL. URLs are matched in their normal
form (`normal_urls`), so `%61dmin`, `:443` or `x/../admin` spell no way around a pattern.

The engine asks `gate_call()`, then records the request and waits (`wait()`) polling the
database, so any web server or CLI can answer from any process. After an approval it asks
again: if the call would now act on something else (the page changed meanwhile), it is not
done (`changed_text`).
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import unquote

from django.db import transaction
from django.utils import timezone

from agents.ports import ToolsPort
from agents.shell_commands import COMMAND_PATTERN, CommandSubject
from budgets.units import format_duration
from runs import events
from runs.models import Approval, ApprovalState, Run, RunState
from runs.signals import approval_requested
from runs.states import EventKind

POLL_SECONDS = 0.5


def gate(patterns: tuple[str, ...] | list[str], tool: str, subjects: list[str]) -> tuple[str, str] | None:
    """(the pattern, what it matched) for the first `approve:` entry that holds this call.

    A URL is matched in its normal form (see normal_urls), and so is a pattern that is a URL:
    `navigate:https://example.com/admin/*` holds `HTTPS://EXAMPLE.com:443/%61dmin/x` too."""
    for pattern in patterns:
        command = COMMAND_PATTERN.match(pattern.strip())
        if command is not None:
            if command["tool"] == tool and (subject := _command_match(command["spec"], subjects)) is not None:
                return pattern, subject
            continue
        name, _, glob = pattern.partition(":")
        if name.strip() != tool:
            continue
        glob = glob.strip()
        if not glob:
            return pattern, ""
        globs = {glob.lower(), *(g.lower() for g in normal_urls(glob))}
        for subject in subjects:
            if isinstance(subject, CommandSubject) and subject.unreadable:  # fail closed: it could be anything
                return pattern, str(subject)
            for form in (subject.strip(), *normal_urls(subject.strip())):
                if any(fnmatch.fnmatchcase(form.lower(), g) for g in globs):
                    return pattern, subject.strip()
    return None


def _command_match(spec: str, subjects: list[str]) -> str | None:
    """The subject a `tool(prefix:*)` or `tool(exact command)` pattern holds, or None. A prefix
    ends at a word: `git push:*` holds `git push origin x`, not `git pushy`. A subject read from
    a command line (a CommandSubject) says itself whether the pattern holds it."""
    for subject in subjects:
        if isinstance(subject, CommandSubject) and subject.held_by(spec):
            return str(subject)
    spec = " ".join(spec.split())
    prefix = spec[:-2].rstrip() if spec.endswith(":*") else None
    for subject in subjects:
        if isinstance(subject, CommandSubject):
            continue
        said = " ".join(subject.split())
        if prefix is None and said == spec:
            return subject.strip()
        if prefix is not None and (said == prefix or said.startswith(prefix + " ") or not prefix):
            return subject.strip()
    return None


def equivalents_of(tools: ToolsPort, name: str, arguments: dict) -> list[tuple[str, list[str]]]:
    """(tool, subjects) pairs a call is gated as: the call itself first, then what the tools
    port says it amounts to (a browser's Enter on a button is a click on it)."""
    return tools.approval_equivalents(name, arguments)


def gate_call(patterns: tuple[str, ...] | list[str], equivalents: list[tuple[str, list[str]]]):
    """gate() over each (tool, subjects) pair a call is equivalent to: the first that holds."""
    for tool, subjects in equivalents:
        matched = gate(patterns, tool, subjects)
        if matched is not None:
            return matched
    return None


URL_RE = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}
UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def normal_urls(text: str) -> list[str]:
    """The forms a browser may read `text` as, when it is a URL: scheme and host in lower
    case, no default port, no user name, percent-encoded unreserved characters decoded, dot
    segments resolved (what the browser does before it sends the request), and the same with
    every escape decoded (what a server may do). [] for what is not a URL. Glob characters
    (`*?[`) pass through, so a pattern that is a URL is normalised as its subjects are."""
    if not URL_RE.match(text):
        return []
    scheme, rest = re.sub(r"[\t\n\r]", "", text).split("://", 1)  # browsers drop these
    scheme = scheme.lower()
    cut = re.search(r"[/\\?#]", rest)
    authority, path = (rest[: cut.start()], rest[cut.start() :]) if cut else (rest, "")
    host = authority.rpartition("@")[2].lower()
    port = re.search(r":([0-9*]*)\Z", host)
    if port and port.group(1) in ("", DEFAULT_PORTS.get(scheme)):
        host = host[: port.start()]
    host = re.sub(r"\.+(?=(:[0-9*]*)?\Z)", "", host)  # `example.com.` is example.com
    if scheme in DEFAULT_PORTS:
        path = path.replace("\\", "/")  # as a browser reads an http(s) URL
    path = path if path.startswith("/") else "/" + path
    forms = [f"{scheme}://{_decode_unreserved(host)}{_dot_segments(_decode_unreserved(path))}"]
    forms.append(f"{scheme}://{unquote(host)}{_dot_segments(unquote(path))}")
    return list(dict.fromkeys(forms))


def _decode_unreserved(text: str) -> str:
    def decode(match: re.Match) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in UNRESERVED else match.group(0).upper()

    return re.sub(r"%([0-9a-fA-F]{2})", decode, text)


def _dot_segments(path: str) -> str:
    """RFC 3986 remove_dot_segments on a path that starts with /; the query stays as it is."""
    cut = re.search(r"[?#]", path)
    path, tail = (path[: cut.start()], path[cut.start() :]) if cut else (path, "")
    segments = path.split("/")[1:]
    out: list[str] = []
    for i, segment in enumerate(segments):
        if segment not in (".", ".."):
            out.append(segment)
            continue
        if segment == ".." and out:
            out.pop()
        if i == len(segments) - 1:
            out.append("")  # `/a/..` is `/`, a directory
    return "/" + "/".join(out) + tail


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
        EventKind.APPROVAL_REQUESTED,
        f"awaiting approval #{approval.pk}: {approval.action_text}{what}; answer with "
        f"`auto {run.kind} approve|reject #{run.pk} [REASON]` or on the run page, within "
        f"{format_duration(timeout_seconds)}",
        approval=approval.pk,
    )
    approval_requested.send(sender=Approval, approval=approval)  # notifications listen
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
            EventKind.APPROVAL_ANSWERED,
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


def changed_text(approval: Approval, asked: list[tuple[str, list[str]]], now: list[tuple[str, list[str]]]) -> str:
    """ "" when the call still describes what the person approved; else what the model hears
    (and the run's events say) instead of the action: the page changed while it waited, so
    the approved click could land on another element."""
    if now == asked:
        return ""
    verb = "clicked" if any(tool == "click" for tool, _ in asked) else "done"
    shown = "; ".join(f"{tool}: {', '.join(repr(s) for s in subjects[:6])}" for tool, subjects in now)
    events.record(
        approval.run,
        EventKind.APPROVAL_STALE,
        f"approval #{approval.pk} not acted on: the page changed while it waited (now {shown})",
        approval=approval.pk,
    )
    return (
        f"not done: the page changed while waiting for approval; nothing was {verb}. What was approved: "
        f"{approval.subject or approval.action_text!r} ({approval.pattern}); what the call would act on now: "
        f"{shown}. Look at the page again and ask again if the action is still wanted."
    )
