"""The figures observed in-process (docs: Metrics): model-call and tool-call latency, model-call
retries, live push latency. Low in the layers so that the engine, the model provider and the live
hub can observe into them; /metrics (ops/metrics.py) reads them with the database's figures.

Off unless RYSH_METRICS=true, and then cheap: with metrics off, observing is a check and a return
and prometheus_client is never imported (a worker stays the smaller for it); with metrics on, the
instruments are made at their first use, and settings.py has set PROMETHEUS_MULTIPROC_DIR before
that, so every process of the machine (daphne, each django-q2 worker) writes its own memory-mapped
file in that directory, which /metrics sums. A process without the Django settings (a plain
script) observes when PROMETHEUS_MULTIPROC_DIR is set. `REGISTRY` and the instruments
(`MODEL_CALL_SECONDS`, …) are read as module attributes and made when first read.

Label values are bounded: a model's or a tool's name must look like one (else "other"), and
each label keeps at most MAX_VALUES distinct values per process (then "other"). Never a run id,
never prompt, result or argument text.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from rysh_site.metrics_env import MULTIPROC_ENV

MAX_VALUES = 100  # distinct values a label keeps per process before the rest say "other"
OTHER = "other"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,99}")  # a model's or a tool's name, not a sentence
LEGS = {"task": "task", "wrap-up": "wrap-up", "judging": "judge", "judge": "judge", "rejudge": "rejudge"}

# the instruments, made at first use: (kind, name, help, labels, buckets)
INSTRUMENTS = {
    "MODEL_CALL_SECONDS": (
        "histogram",
        "rysh_model_call_seconds",
        "Seconds a model call took, retries included, by model, leg and outcome (ok | error).",
        ["model", "leg", "outcome"],
        (0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600),
    ),
    "MODEL_CALL_RETRIES": (
        "counter",
        "rysh_model_call_retries",
        "Model calls attempted again after a retryable failure (429, 5xx, overloaded, connection).",
        ["model", "leg"],
        None,
    ),
    "TOOL_CALL_SECONDS": (
        "histogram",
        "rysh_tool_call_seconds",
        "Seconds a tool call took (approval waits excluded), by tool.",
        ["tool"],
        (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    ),
    "PUSH_SECONDS": (
        "histogram",
        "rysh_live_push_seconds",
        "Seconds from a run's event written to its view's HTML handed to the sockets, by path (tail | channel).",
        ["path"],
        (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5),
    ),
}

_made: dict = {}
_made_lock = threading.Lock()


def enabled() -> bool:
    """Metrics on in this process: RYSH_METRICS=true in the settings (which then set
    PROMETHEUS_MULTIPROC_DIR), or, in a process without them, PROMETHEUS_MULTIPROC_DIR set."""
    if os.environ.get(MULTIPROC_ENV):
        return True
    try:
        return bool(settings.RYSH_METRICS)
    except (ImproperlyConfigured, AttributeError):
        return False


def _instruments() -> dict:
    """The registry and the instruments of this process, made (prometheus_client imported) once."""
    if not _made:
        with _made_lock:
            if not _made:
                # only a process with metrics on loads prometheus_client
                from prometheus_client import CollectorRegistry, Counter, Histogram

                registry = CollectorRegistry(auto_describe=True)  # ours only: no process or platform collectors
                made = {"REGISTRY": registry}
                for attribute, (kind, name, text, labels, buckets) in INSTRUMENTS.items():
                    if kind == "counter":
                        made[attribute] = Counter(name, text, labels, registry=registry)
                    else:
                        made[attribute] = Histogram(name, text, labels, buckets=buckets, registry=registry)
                _made.update(made)
    return _made


def __getattr__(name: str):
    """`metrics.REGISTRY`, `metrics.MODEL_CALL_SECONDS`, …: made when first read."""
    if name == "REGISTRY" or name in INSTRUMENTS:
        return _instruments()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if not enabled():
        yield
        return
    started, outcome = time.perf_counter(), "error"
    try:
        yield
        outcome = "ok"
    finally:
        _instruments()["MODEL_CALL_SECONDS"].labels(bounded("model", model), leg_of(purpose), outcome).observe(
            time.perf_counter() - started
        )


def model_retry(model: str, purpose: str) -> None:
    if enabled():
        _instruments()["MODEL_CALL_RETRIES"].labels(bounded("model", model), leg_of(purpose)).inc()


@contextmanager
def tool_call(tool: str) -> Iterator[None]:
    """Time one tool call: `with metrics.tool_call(name): ...`."""
    if not enabled():
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        _instruments()["TOOL_CALL_SECONDS"].labels(bounded("tool", tool)).observe(time.perf_counter() - started)


def push_sent(written: tuple[float, str] | None) -> None:
    """A view's new HTML went to its sockets. `written`: when (time.time()) the oldest change it
    shows was written, and how the hub learned of it (tail | channel); None when not known (a
    socket's first state, a label's push) or when nothing changed."""
    if written is not None and enabled():
        at, path = written
        _instruments()["PUSH_SECONDS"].labels(path if path in ("tail", "channel") else OTHER).observe(
            max(0.0, time.time() - at)
        )
