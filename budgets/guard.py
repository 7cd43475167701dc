"""Live allotments and the max_tokens clamp: the hard ceiling of docs/running-loops.md. Pure.

Before every model call the engine knows an upper bound of the call's counted input;
max_tokens is clamped so that bound + max_tokens fits in what is left, so no leg and no
job can pass its allotment by one token. The bound rests on one fact: a token never
covers less than one byte, so the UTF-8 size of what is sent bounds its tokens; the
call-to-call bound reuses the previous call's exact context plus the bytes appended.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from budgets.plan import Allotment, Plan

MIN_USEFUL_OUTPUT = 256  # below this a call cannot say anything useful: the leg ends instead
DEFAULT_MAX_OUTPUT = 8192
# What the API adds around what we send: its tool-use system prompt, role markers.
REQUEST_OVERHEAD = 2048
MESSAGE_OVERHEAD = 16


def size(value: Any) -> int:
    """UTF-8 bytes of a string, or of the compact JSON of anything else."""
    if isinstance(value, str):
        return len(value.encode())
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@dataclass(frozen=True)
class LastCall:
    """The previous call of this conversation: its exact input, and how many messages it had."""

    context: int  # input + cache write + cache read tokens, as the API reported them
    message_count: int


def input_bound(*, system: str, tools: list, messages: list, last: LastCall | None) -> int:
    """An upper bound of the counted input tokens of the next call.

    With a previous call whose messages are still the prefix of these, its exact input plus
    the bytes of everything appended since (its reply included); otherwise the bytes of all.
    """
    if last is None or last.message_count > len(messages):
        return size(system) + size(tools) + size(messages) + REQUEST_OVERHEAD + MESSAGE_OVERHEAD * len(messages)
    appended = messages[last.message_count :]
    # +1 a message: the separator that joins it to the list already sent
    return last.context + size(appended) + (MESSAGE_OVERHEAD + 1) * len(appended)


BUDGET_CUT = " to fit the budget left; ask for less or save what you have"
_MARKER_RE = re.compile(r"\n\[cut: ([0-9,]+) → [0-9,]+ characters[^\n\]]*\]\Z")


def cut_marker(before: int, after: int, why: str = BUDGET_CUT) -> str:
    """What a cut text says at its end, so the model knows it was cut, from what and why (by
    default: to fit the budget; a tool's own size cap says so instead)."""
    return f"[cut: {before:,} → {after:,} characters{why}]"


def without_marker(text: str) -> tuple[str, int]:
    """A text cut before, as (its head without the marker, the size it had before that cut); any
    other text as (itself, its size). A second cut then says the size the tool first had."""
    found = _MARKER_RE.search(text)
    if found is None:
        return text, len(text)
    return text[: found.start()], int(found[1].replace(",", ""))


def clamp_max_tokens(tokens_left: int, bound: int, ceiling: int = DEFAULT_MAX_OUTPUT) -> int | None:
    """max_tokens so that bound + max_tokens <= tokens_left, or None: too little is left."""
    room = tokens_left - bound
    if room < MIN_USEFUL_OUTPUT:
        return None
    return min(ceiling, room)


@dataclass(frozen=True)
class JobSpent:
    tokens: int  # counted so far by the whole job, judge included
    seconds: float  # model-and-tool clock so far


def job_left(plan: Plan, spent: JobSpent) -> tuple[int | None, float | None]:
    """What the job's outer ceilings leave (None: that axis has no outer limit)."""
    tokens = plan.outer_tokens - spent.tokens if plan.outer_tokens else None
    seconds = plan.outer_seconds - spent.seconds if plan.outer_seconds else None
    return tokens, seconds


def leg_left(
    plan: Plan, leg: str, spent: JobSpent, *, leg_steps: int, leg_tokens: int, leg_seconds: float
) -> Allotment:
    """What the current leg may still spend: min(its own share, what the job has left).

    While the task leg runs under an outer total, the job keeps back the wrap-up's own
    P% share (not the floor, which may exceed the whole total), so an outer ceiling cuts
    the task short before it cuts the landing. The judge reserves nothing here: at judge
    time its bound is exact, and a job that cannot afford it ends `budget exhausted`.
    """
    share = plan.split.task if leg == "task" else plan.split.takeover
    assert share is not None, "a wrap-up leg needs a takeover share"
    tokens_job, seconds_job = job_left(plan, spent)
    if leg == "task" and plan.split.raw_takeover is not None:
        reserve = plan.split.raw_takeover
        tokens_job = None if tokens_job is None else tokens_job - reserve.tokens
        seconds_job = None if seconds_job is None else seconds_job - reserve.seconds
    tokens = share.tokens - leg_tokens
    seconds = share.seconds - leg_seconds
    if tokens_job is not None:
        tokens = min(tokens, tokens_job)
    if seconds_job is not None:
        seconds = min(seconds, seconds_job)
    return Allotment(steps=max(share.steps - leg_steps, 0), seconds=max(seconds, 0), tokens=max(tokens, 0))
