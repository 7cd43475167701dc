"""The figures observed in-process (docs: Metrics): model-call and tool-call latency, model-call
retries, live push latency. Low in the layers so that the engine, the model provider and the live
hub can observe into them; /metrics (ops/metrics.py) reads them with the database's figures.

Observing is cheap (a lock and a few additions; with RYSH_METRICS=true, a write into a memory-
mapped file of this process), so the instruments are always there: with metrics off they count
in memory and nobody reads them. With metrics on, settings.py has set PROMETHEUS_MULTIPROC_DIR
before this module's first import, and every process of the machine (daphne, each django-q2
worker) writes its own file in that directory, which /metrics sums.

Label values are bounded: a model's or a tool's name must look like one (else "other"), and
each label keeps at most MAX_VALUES distinct values per process (then "other"). Never a run id,
never prompt, result or argument text.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)  # ours only: no process or platform collectors

MAX_VALUES = 100  # distinct values a label keeps per process before the rest say "other"
OTHER = "other"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,99}")  # a model's or a tool's name, not a sentence
LEGS = {"task": "task", "wrap-up": "wrap-up", "judging": "judge", "judge": "judge", "rejudge": "rejudge"}

MODEL_CALL_SECONDS = Histogram(
    "rysh_model_call_seconds",
    "Seconds a model call took, retries included, by model, leg and outcome (ok | error).",
    ["model", "leg", "outcome"],
    buckets=(0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)
MODEL_CALL_RETRIES = Counter(
    "rysh_model_call_retries",
    "Model calls attempted again after a retryable failure (429, 5xx, overloaded, connection).",
    ["model", "leg"],
    registry=REGISTRY,
)
TOOL_CALL_SECONDS = Histogram(
    "rysh_tool_call_seconds",
    "Seconds a tool call took (approval waits excluded), by tool.",
    ["tool"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)
PUSH_SECONDS = Histogram(
    "rysh_live_push_seconds",
    "Seconds from a run's event written to its view's HTML handed to the sockets, by path (tail | channel).",
    ["path"],
    buckets=(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5),
    registry=REGISTRY,
)

_seen: dict[str, set[str]] = {}
_seen_lock = threading.Lock()


def bounded(label: str, value: str) -> str:
    """`value` if it looks like a name and fits in the label's MAX_VALUES, else "other"."""
    if not NAME.fullmatch(value or ""):
        return OTHER
    with _seen_lock:
        seen = _seen.setdefault(label, set())
        if value not in seen:
            if len(seen) >= MAX_VALUES:
                return OTHER
            seen.add(value)
    return value


def leg_of(purpose: str) -> str:
    return LEGS.get(purpose, OTHER)


@contextmanager
def model_call(model: str, purpose: str) -> Iterator[None]:
    """Time one model call (all its attempts): `with metrics.model_call(model, leg): ...`."""
    started, outcome = time.perf_counter(), "error"
    try:
        yield
        outcome = "ok"
    finally:
        MODEL_CALL_SECONDS.labels(bounded("model", model), leg_of(purpose), outcome).observe(
            time.perf_counter() - started
        )


def model_retry(model: str, purpose: str) -> None:
    MODEL_CALL_RETRIES.labels(bounded("model", model), leg_of(purpose)).inc()


@contextmanager
def tool_call(tool: str) -> Iterator[None]:
    """Time one tool call: `with metrics.tool_call(name): ...`."""
    started = time.perf_counter()
    try:
        yield
    finally:
        TOOL_CALL_SECONDS.labels(bounded("tool", tool)).observe(time.perf_counter() - started)


def push_sent(written: tuple[float, str] | None) -> None:
    """A view's new HTML went to its sockets. `written`: when (time.time()) the oldest change it
    shows was written, and how the hub learned of it (tail | channel); None when not known (a
    socket's first state, a label's push) or when nothing changed."""
    if written is not None:
        at, path = written
        PUSH_SECONDS.labels(path if path in ("tail", "channel") else OTHER).observe(max(0.0, time.time() - at))
