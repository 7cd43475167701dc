"""A fake Anthropic Messages API on loopback, for driving the real SDK in tests.

    with FakeAnthropic() as fake:
        fake.reply(text="hello")
        client = anthropic.Anthropic(api_key="test", base_url=fake.base_url)

or, in a test module, `from tests.fakes.anthropic_server import fake_anthropic` (a fixture
that also points ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY at the fake).

It serves `POST /v1/messages/count_tokens` (the request's total input tokens by the arithmetic
below, nothing consumed from the reply queue; recorded in `count_requests`, failures injected
with `fail_next_count`) and `POST /v1/messages` as JSON or, with `"stream": true`, as server-sent events shaped
like the real API's, so the official SDK parses them unchanged. Replies come from a queue
(`reply`), a callable (`responder`) or a default ("done", end_turn). Usage numbers are computed
from the request, prompt caching included, so budget code can be tested against them.

Token arithmetic (deterministic, not a real tokenizer):
- the request is cut into items in cache order: each tool, each system block, each message's
  content blocks; an item costs ceil(compact JSON bytes / 4), and each message adds 3 tokens
  of overhead on its first item. The total never exceeds the request's UTF-8 byte length.
- cache: items with `cache_control` are breakpoints. The longest prefix (ending at any item up
  to the last breakpoint) written by an earlier request is read (`cache_read_input_tokens`);
  if the prefix up to the last breakpoint is not cached yet, the part after the read one is
  written (`cache_creation_input_tokens`); what follows the last breakpoint is
  `input_tokens`. Every breakpoint prefix of a request is cached afterwards. Unlike the real
  API there is no minimum cacheable length and no TTL, so small test prompts cache.
- output: ceil(compact JSON bytes of the content blocks / 4), min 1, unless given. Past the
  request's `max_tokens` the text is cut to max_tokens*4 bytes, tool calls are dropped (they
  would be unfinished) and stop_reason is `max_tokens`.

Thinking: a reply may carry `thinking` (a block signed over its text; streamed as thinking_delta
and signature_delta events, as the real API does), `redacted_thinking` (opaque data) and any
`stop_reason` (pause_turn, refusal, model_context_window_exceeded…). Like the real API, a request
is refused (400 invalid_request_error) when an assistant turn that used tools drops or alters the
thinking the fake issued with those tools, when a thinking block's signature does not match, when
`output_config.effort` goes to a model that takes none, or `thinking.budget_tokens` to one from 4.7 on.

Every Messages request also leaves an `Exchange` in `exchanges` (the server's own log): when
it arrived and when its answer was over (monotonic seconds), its status, the usage it was
billed (zero for an error, and for an error sent inside a stream) and a tag — what `tagger(body)`
says the request belongs to (e.g. a run), None without a tagger. `latency` delays the first
byte of every answer that `delay_next` does not delay.

It also serves the Models API as the installed SDK reads it (anthropic.types.ModelInfo):
`GET /v1/models` (a page: `data`, `has_more`, `first_id`, `last_id`; `limit`, `after_id`,
`before_id` honoured) and `GET /v1/models/{id}` (an id of the list, or an alias of `aliases`;
otherwise 404 not_found_error). The list is `models` (model_info() dicts; by default
DEFAULT_MODELS), recorded in `models_requests`, failures injected with `fail_next_models`.
Neither counts as a Messages call.

The key may come as `x-api-key` or as `Authorization: Bearer` (what the installed SDK sends);
without either the answer is 401 authentication_error, as from the real API.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

import pytest

from budgets.efforts import takes_effort

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ERROR_MESSAGES = {
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}
FAKE_KEY = "sk-ant-fake-key"
MESSAGE_OVERHEAD = 3  # tokens per message for its role framing
MAX_BREAKPOINTS = 4  # the real API refuses more cache_control blocks than this
COUNT_PATH = "/v1/messages/count_tokens"
THINKING_TYPES = ("thinking", "redacted_thinking")
MODELS_PATH = "/v1/models"


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    json: Any  # the parsed body, None when it was not JSON
    received: float = 0.0  # time.monotonic() when the body had been read

    @property
    def stream(self) -> bool:
        return bool(isinstance(self.json, dict) and self.json.get("stream"))


@dataclass
class Exchange:
    """One Messages request as the server saw it (its log): the truth for spend and overlap."""

    tag: str | None
    started: float  # time.monotonic() when the request had been read
    ended: float | None = None  # when its answer was written (or the client went away)
    status: int = 0
    usage: dict[str, int] = field(default_factory=dict)  # billed; empty for an error
    stream: bool = False
    aborted: bool = False  # the client closed the connection before the answer was over

    @property
    def billed(self) -> int:
        """Tokens billed in the budget's unit: input + cache write + output (cache reads apart)."""
        u = self.usage
        return u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0) + u.get("output_tokens", 0)


@dataclass
class _Failure:
    status: int
    retry_after: float | None
    message: str | None
    mid_stream: bool


@dataclass
class _Delay:
    first_byte: float
    between_events: float


@dataclass
class _Outcome:
    """What one request gets back, decided under the lock, sent outside it."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    stream_error: dict[str, Any] | None = None  # sent as an `error` event after message_start
    delay: _Delay = field(default_factory=lambda: _Delay(0.0, 0.0))
    exchange: Exchange | None = None  # its line in the server's log (Messages requests only)


# ---------------------------------------------------------------- token arithmetic


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode()


def _tokens_of(value: Any) -> int:
    return math.ceil(len(_compact(value)) / 4)


def _without_cache_control(block: Any) -> Any:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _items(body: dict[str, Any]) -> list[tuple[Any, int, bool]]:
    """(item without cache_control, tokens, is breakpoint) in the order the cache sees them."""
    items: list[tuple[Any, int, bool]] = []

    def add(block: Any, overhead: int = 0) -> None:
        bare = _without_cache_control(block)
        marked = isinstance(block, dict) and "cache_control" in block
        items.append((bare, _tokens_of(bare) + overhead, marked))

    for tool in body.get("tools") or []:
        add(tool)
    for block in _blocks(body.get("system")):
        add(block)
    for message in body.get("messages") or []:
        for i, block in enumerate(_blocks(message.get("content"))):
            add(block, MESSAGE_OVERHEAD if i == 0 else 0)
    return items


def count_breakpoints(body: dict[str, Any]) -> int:
    return sum(1 for _, _, marked in _items(body) if marked)


class PromptCache:
    """Prefix digests written by earlier requests, per model."""

    def __init__(self) -> None:
        self._written: set[str] = set()

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        items = _items(body)
        digests, cumulative = self._prefixes(body.get("model", ""), items)
        total = cumulative[-1] if cumulative else 0
        breakpoints = [i for i, (_, _, marked) in enumerate(items) if marked]
        if not breakpoints:
            return _usage(total, 0, 0)
        last = breakpoints[-1]
        hits = [i for i in range(last + 1) if digests[i] in self._written]
        read = cumulative[hits[-1]] if hits else 0
        write = 0 if hits and hits[-1] == last else cumulative[last] - read
        self._written.update(digests[i] for i in breakpoints)
        return _usage(total - cumulative[last], write, read)

    @staticmethod
    def _prefixes(model: str, items: list[tuple[Any, int, bool]]) -> tuple[list[str], list[int]]:
        running = hashlib.sha256(model.encode())
        digests, cumulative, sum_ = [], [], 0
        for bare, tokens, _ in items:
            running.update(_compact(bare))
            digests.append(running.copy().hexdigest())
            sum_ += tokens
            cumulative.append(sum_)
        return digests, cumulative


def _usage(input_tokens: int, write: int, read: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }


# ---------------------------------------------------------------- replies


@dataclass
class ScriptedReply:
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    output_tokens: int | None = None
    thinking: str | None = None  # a thinking block (signed) before the rest
    redacted_thinking: str | None = None  # a redacted_thinking block's opaque data
    stop_reason: str | None = None  # e.g. pause_turn, refusal, model_context_window_exceeded

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> ScriptedReply:
        unknown = set(spec) - SCRIPTED_KEYS
        if unknown:
            raise ValueError(f"responder returned unknown keys: {sorted(unknown)}")
        return cls(
            spec.get("text"),
            list(spec.get("tool_calls") or []),
            spec.get("output_tokens"),
            spec.get("thinking"),
            spec.get("redacted_thinking"),
            spec.get("stop_reason"),
        )


SCRIPTED_KEYS = {"text", "tool_calls", "output_tokens", "thinking", "redacted_thinking", "stop_reason"}
_SIGNING_KEY = b"fake-anthropic-thinking"


def signature_of(thinking: str) -> str:
    """What the fake signs a thinking block with: its text, so an altered block fails."""
    return base64.b64encode(hmac.new(_SIGNING_KEY, thinking.encode(), hashlib.sha256).digest()).decode()


def build_content(reply: ScriptedReply, max_tokens: int, ids: Iterator[int]) -> tuple[list, str, int]:
    """Content blocks, stop_reason and output tokens for a reply under max_tokens. Thinking
    counts as output at its full length, as the API bills it."""
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": signature_of(reply.thinking)})
    if reply.redacted_thinking is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_fake_{next(ids):04d}",
                "name": call["name"],
                "input": dict(call.get("input") or {}),
            }
        )
    output = reply.output_tokens if reply.output_tokens is not None else max(1, _tokens_of(content))
    if output <= max_tokens:
        return content, reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"), output
    # Cut off mid-generation: the text stops at the cap, tool calls after it never finish.
    text = (reply.text or "").encode()[: max_tokens * 4].decode(errors="ignore")
    return ([{"type": "text", "text": text}] if text else []), "max_tokens", max_tokens


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message or ERROR_MESSAGES.get(status, kind)}}


def sse_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The event sequence the real API streams for a finished message."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, stop_sequence=None, usage=dict(usage, output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if block["type"] == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        for piece in _chunks(block["thinking"], 16):
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
            )
        signature = {"type": "signature_delta", "signature": block["signature"]}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": signature}
    elif block["type"] == "redacted_thinking":  # sent whole in its start event
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": dict(block)}
    elif block["type"] == "text":
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        )
        for piece in _chunks(block["text"], 16):
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
            )
    else:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": dict(block, input={})},
        )
        for piece in _chunks(json.dumps(block["input"]), 24):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# ---------------------------------------------------------------- the Models API


def _supported(flag: bool) -> dict[str, bool]:
    return {"supported": flag}


def model_info(
    model_id: str,
    display_name: str | None = None,
    *,
    created_at: str = "2026-01-01T00:00:00Z",
    max_input_tokens: int | None = 200_000,
    max_tokens: int | None = 64_000,
    effort: bool = True,
    thinking: bool = True,
    line: str | None = None,
    lifecycle: str = "active",
) -> dict[str, Any]:
    """One model as `GET /v1/models` lists it, every field anthropic.types.ModelInfo reads."""
    levels = {level: _supported(effort) for level in ("low", "medium", "high", "max")}
    return {
        "type": "model",
        "id": model_id,
        "display_name": display_name or model_id,
        "created_at": created_at,
        "deprecated_at": None,
        "retires_at": None,
        "lifecycle": lifecycle,
        "line": line,
        "max_input_tokens": max_input_tokens,
        "max_tokens": max_tokens,
        "capabilities": {
            "batch": _supported(True),
            "citations": _supported(True),
            "code_execution": _supported(False),
            "context_management": {"supported": False},
            "effort": {**levels, "supported": effort},
            "image_input": _supported(True),
            "pdf_input": _supported(True),
            "server_tools": {"supported": False, "code_execution": _supported(False), "web_search": _supported(False)},
            "structured_outputs": _supported(True),
            "thinking": {
                "supported": thinking,
                "types": {
                    "adaptive": _supported(thinking),
                    "between_tools": _supported(False),
                    "disabled": _supported(True),
                    "enabled": _supported(thinking),
                },
            },
        },
    }


# What the fake's key can use unless a test says otherwise (newest first, as the API lists
# them): the models the tests' recipes and settings name. The limits are the fake's own.
DEFAULT_MODELS = [
    model_info(
        "claude-opus-4-7", "Claude Opus 4.7", created_at="2026-04-01T00:00:00Z", max_tokens=128_000, line="opus"
    ),
    model_info("claude-sonnet-4-6", "Claude Sonnet 4.6", created_at="2026-02-17T00:00:00Z", line="sonnet"),
    model_info(
        "claude-opus-4-6", "Claude Opus 4.6", created_at="2026-02-05T00:00:00Z", max_tokens=128_000, line="opus"
    ),
    model_info("claude-haiku-4-5-20251001", "Claude Haiku 4.5", created_at="2025-10-15T00:00:00Z", line="haiku"),
    model_info("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", created_at="2025-09-29T00:00:00Z", line="sonnet"),
    # the current lineup the default settings name (listed last so the tests' pages stay put)
    model_info("claude-sonnet-5-5", "Claude Sonnet 5.5", created_at="2026-10-20T00:00:00Z", line="sonnet"),
    model_info("claude-haiku-5-5", "Claude Haiku 5.5", created_at="2026-10-20T00:00:00Z", line="haiku"),
    model_info(
        "claude-opus-5-5", "Claude Opus 5.5", created_at="2026-10-20T00:00:00Z", max_tokens=128_000, line="opus"
    ),
]
DEFAULT_ALIASES = {"claude-haiku-4-5": "claude-haiku-4-5-20251001", "claude-sonnet-4-5": "claude-sonnet-4-5-20250929"}


def models_page(models: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
    """One page of the list, cut by `limit` after `after_id` or before `before_id`."""
    limit = int((query.get("limit") or ["20"])[0])
    ids = [m["id"] for m in models]
    start, end = 0, len(models)
    if query.get("after_id"):
        start = ids.index(query["after_id"][0]) + 1 if query["after_id"][0] in ids else len(ids)
    if query.get("before_id"):
        end = ids.index(query["before_id"][0]) if query["before_id"][0] in ids else 0
        start = max(start, end - limit)
    page = models[start : min(end, start + limit)]
    has_more = (start + len(page) < end) if not query.get("before_id") else start > 0
    return {
        "data": page,
        "has_more": has_more,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
    }


# ---------------------------------------------------------------- the server


class FakeAnthropic:
    """The fake server. Start with `with FakeAnthropic() as fake:` (or start()/close())."""

    def __init__(self, *, api_keys: Iterable[str] | None = None) -> None:
        self.api_keys = set(api_keys) if api_keys is not None else None  # None: any key will do
        self.responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.requests: list[RecordedRequest] = []  # Messages calls (what `calls` counts)
        self.count_requests: list[RecordedRequest] = []  # token counts, apart
        self.models: list[dict[str, Any]] = [dict(m) for m in DEFAULT_MODELS]  # what the Models API lists
        self.aliases: dict[str, str] = dict(DEFAULT_ALIASES)  # alias -> id, for GET /v1/models/{alias}
        self.models_requests: list[RecordedRequest] = []  # Models API calls, apart
        self._models_failures: list[_Failure] = []
        self._count_failures: list[_Failure] = []
        self.aborted_streams = 0  # streams the client closed before message_stop
        self.exchanges: list[Exchange] = []  # the server's log of Messages requests
        self.tagger: Callable[[dict[str, Any]], str | None] | None = None
        self.latency = 0.0  # first-byte delay of every answer delay_next does not delay
        self.cache = PromptCache()
        self._replies: list[ScriptedReply] = []
        self._failures: list[_Failure] = []
        self._delays: list[_Delay] = []
        self._lock = threading.RLock()  # a responder may call reply() or fail_next()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        # tool_use id -> the thinking blocks issued in the same reply: a later request must
        # send them back unchanged in that assistant turn, as the real API demands
        self.issued_thinking: dict[str, list[dict[str, Any]]] = {}
        self._redacted: set[str] = set()  # redacted_thinking data the fake has issued

    # -- scripting

    def reply(
        self,
        text: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        output_tokens: int | None = None,
        *,
        thinking: str | None = None,
        redacted_thinking: str | None = None,
        stop_reason: str | None = None,
    ) -> None:
        with self._lock:
            self._replies.append(
                ScriptedReply(text, list(tool_calls or []), output_tokens, thinking, redacted_thinking, stop_reason)
            )

    def fail_next(
        self,
        status: int = 529,
        times: int = 1,
        retry_after: float | None = None,
        message: str | None = None,
        *,
        mid_stream: bool = False,
    ) -> None:
        """Fail the next `times` requests with a real error body. With mid_stream, a streaming
        request gets 200 and message_start, then the error as an SSE `error` event, as the
        real API does when it overloads after the stream has begun."""
        with self._lock:
            self._failures.extend(_Failure(status, retry_after, message, mid_stream) for _ in range(times))

    def fail_next_count(self, status: int = 529, times: int = 1) -> None:
        """Fail the next `times` token-count requests with a real error body."""
        with self._lock:
            self._count_failures.extend(_Failure(status, None, None, False) for _ in range(times))

    def fail_next_models(self, status: int = 500, times: int = 1) -> None:
        """Fail the next `times` Models API requests with a real error body."""
        with self._lock:
            self._models_failures.extend(_Failure(status, None, None, False) for _ in range(times))

    def delay_next(self, seconds: float = 0.0, *, between_events: float = 0.0) -> None:
        """Delay the next response's first byte; for a stream, also each later event."""
        with self._lock:
            self._delays.append(_Delay(seconds, between_events))

    @property
    def calls(self) -> int:
        return len(self.requests)

    def environ(self, api_key: str = FAKE_KEY) -> dict[str, str]:
        """Variables that point the SDK (in this process or a child) at the fake."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    # -- lifecycle

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a handler stuck in a delay must not hold close()
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        ).start()
        return self

    def close(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- deciding an answer

    def _decide(self, record: RecordedRequest) -> _Outcome:
        if record.path.split("?")[0] == COUNT_PATH:
            return self._count(record)
        if record.path.split("?")[0].startswith(MODELS_PATH):
            return self._models(record)
        with self._lock:
            self.requests.append(record)
            delay = self._delays.pop(0) if self._delays else _Delay(self.latency, 0.0)
            outcome = self._refusal(record) or self._failure(record) or self._answer(record.json)
            outcome.exchange = self._log(record, outcome)
        outcome.delay = delay
        return outcome

    def _log(self, record: RecordedRequest, outcome: _Outcome) -> Exchange:
        body = record.json if isinstance(record.json, dict) else {}
        tag = self.tagger(body) if self.tagger is not None and body else None
        billed = outcome.status == 200 and outcome.stream_error is None
        usage = dict(outcome.body.get("usage") or {}) if billed else {}
        exchange = Exchange(tag, record.received, status=outcome.status, usage=usage, stream=record.stream)
        if outcome.stream_error is not None:
            kind = outcome.stream_error["error"]["type"]
            exchange.status = next((code for code, name in ERROR_TYPES.items() if name == kind), 500)
        self.exchanges.append(exchange)
        return exchange

    def _count(self, record: RecordedRequest) -> _Outcome:
        with self._lock:
            self.count_requests.append(record)
            key = record.headers.get("x-api-key") or _bearer(record.headers.get("authorization", ""))
            if not key or (self.api_keys is not None and key not in self.api_keys):
                return _Outcome(401, error_body(401, "invalid x-api-key"))
            if self._count_failures:
                failure = self._count_failures.pop(0)
                return _Outcome(failure.status, error_body(failure.status, failure.message))
            body = record.json if isinstance(record.json, dict) else {}
            problem = _invalid({**body, "max_tokens": 1}) or (
                "max_tokens: Extra inputs are not permitted" if "max_tokens" in body else None
            )
            if problem:
                return _Outcome(400, error_body(400, problem))
            return _Outcome(200, {"input_tokens": sum(tokens for _, tokens, _ in _items(body))})

    def _models(self, record: RecordedRequest) -> _Outcome:
        with self._lock:
            self.models_requests.append(record)
            key = record.headers.get("x-api-key") or _bearer(record.headers.get("authorization", ""))
            if not key or (self.api_keys is not None and key not in self.api_keys):
                return _Outcome(401, error_body(401, "invalid x-api-key"))
            if self._models_failures:
                failure = self._models_failures.pop(0)
                return _Outcome(failure.status, error_body(failure.status, failure.message))
            path, _, query = record.path.partition("?")
            if path.rstrip("/") == MODELS_PATH:
                return _Outcome(200, models_page(self.models, parse_qs(query)))
            wanted = unquote(path[len(MODELS_PATH) + 1 :])
            wanted = self.aliases.get(wanted, wanted)
            for model in self.models:
                if model["id"] == wanted:
                    return _Outcome(200, model)
            return _Outcome(404, error_body(404, f"model: {unquote(path[len(MODELS_PATH) + 1 :])}"))

    def _refusal(self, record: RecordedRequest) -> _Outcome | None:
        key = record.headers.get("x-api-key") or _bearer(record.headers.get("authorization", ""))
        if not key:
            return _Outcome(401, error_body(401, "x-api-key header is required"))
        if self.api_keys is not None and key not in self.api_keys:
            return _Outcome(401, error_body(401, "invalid x-api-key"))
        if record.path.split("?")[0] != "/v1/messages":
            return _Outcome(404, error_body(404, f"Not found: {record.path}"))
        problem = _invalid(record.json) or self._thinking_problem(record.json)
        return _Outcome(400, error_body(400, problem)) if problem else None

    def _thinking_problem(self, body: dict[str, Any]) -> str | None:
        """What the real API refuses about thinking: a block altered or dropped from an
        assistant turn of a tool-use loop, and settings the model does not take."""
        model = str(body.get("model", ""))
        effort = (body.get("output_config") or {}).get("effort")
        if effort is not None and not takes_effort(model):
            return f"output_config.effort: this model ({model}) does not support the effort parameter"
        if "budget_tokens" in (body.get("thinking") or {}) and takes_effort(model):
            return f"thinking.budget_tokens: not supported for {model}; use thinking.type 'adaptive'"
        for n, message in enumerate(body["messages"]):
            if message.get("role") != "assistant":
                continue
            blocks = _blocks(message.get("content"))
            sent = [_without_cache_control(b) for b in blocks if b.get("type") in THINKING_TYPES]
            for m, block in enumerate(sent):
                if block.get("type") == "thinking" and block.get("signature") != signature_of(
                    block.get("thinking", "")
                ):
                    return f"messages.{n}.content.{m}: Invalid `signature` in `thinking` block"
                if block.get("type") == "redacted_thinking" and block.get("data") not in self._redacted:
                    return f"messages.{n}.content.{m}: Invalid `data` in `redacted_thinking` block"
            for block in blocks:
                issued = self.issued_thinking.get(block.get("id", "")) if block.get("type") == "tool_use" else None
                if issued is not None and sent != issued:
                    return (
                        f"messages.{n}.content: the thinking blocks of an assistant turn that used tools must be "
                        "passed back unchanged in the same order"
                    )
        return None

    def _failure(self, record: RecordedRequest) -> _Outcome | None:
        if not self._failures:
            return None
        failure = self._failures.pop(0)
        if failure.mid_stream and record.stream:
            started = {
                "id": f"msg_fake_{next(self._ids):04d}",
                "type": "message",
                "role": "assistant",
                "model": record.json["model"],
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": dict(_usage(0, 0, 0), output_tokens=0),
            }
            return _Outcome(200, started, stream_error=error_body(failure.status, failure.message))
        headers = {"retry-after": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
        return _Outcome(failure.status, error_body(failure.status, failure.message), headers)

    def _answer(self, body: dict[str, Any]) -> _Outcome:
        if self.responder is not None:
            reply = ScriptedReply.from_dict(self.responder(body))
        else:
            reply = self._replies.pop(0) if self._replies else ScriptedReply("done")
        content, stop_reason, output = build_content(reply, int(body["max_tokens"]), self._ids)
        thinking = [block for block in content if block["type"] in THINKING_TYPES]
        self._redacted.update(block["data"] for block in thinking if block["type"] == "redacted_thinking")
        for block in content:
            if block["type"] == "tool_use" and thinking:
                self.issued_thinking[block["id"]] = thinking
        usage = dict(self.cache.usage(body), output_tokens=output)
        message = {
            "id": f"msg_fake_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        return _Outcome(200, message)


def _bearer(value: str) -> str:
    return value[len("Bearer ") :].strip() if value.startswith("Bearer ") else ""


def _invalid(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: must be at least 1"
    if not body["messages"]:
        return "messages: at least one message is required"
    if count_breakpoints(body) > MAX_BREAKPOINTS:
        return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided."
    return None


def _handler_for(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # headers and body go out in separate writes: without this each call waits ~40 ms
        # for the client's delayed ACK, which would swamp every timing taken against the fake
        disable_nagle_algorithm = True
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's pool expects

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            record = self._record()
            outcome = fake._decide(record)
            try:
                if fake._stopping.wait(outcome.delay.first_byte):
                    self.close_connection = True
                    return
                try:
                    if outcome.status == 200 and record.stream:
                        self._send_stream(outcome)
                    else:
                        self._send_json(outcome)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (cancel, timeout)
                    if outcome.exchange is not None:
                        outcome.exchange.aborted = True
            finally:
                if outcome.exchange is not None:
                    outcome.exchange.ended = time.monotonic()

        def _record(self) -> RecordedRequest:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            return RecordedRequest(self.path, headers, parsed, time.monotonic())

        def _send_json(self, outcome: _Outcome) -> None:
            data = json.dumps(outcome.body).encode()
            self.send_response(outcome.status)
            self._headers(outcome.headers, "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, outcome: _Outcome) -> None:
            self.send_response(200)
            self._headers(outcome.headers, "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                self._write_events(outcome)
            except (BrokenPipeError, ConnectionResetError):
                with fake._lock:
                    fake.aborted_streams += 1
                self.close_connection = True
                if outcome.exchange is not None:
                    outcome.exchange.aborted = True

        def _write_events(self, outcome: _Outcome) -> None:
            events: Iterable[tuple[str, dict[str, Any]]] = sse_events(outcome.body)
            if outcome.stream_error is not None:
                events = [
                    ("message_start", {"type": "message_start", "message": outcome.body}),
                    ("error", outcome.stream_error),
                ]
            for n, (name, data) in enumerate(events):
                if n and outcome.delay.between_events and fake._stopping.wait(outcome.delay.between_events):
                    self.close_connection = True
                    return
                self._chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self._chunk(b"")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _headers(self, extra: dict[str, str], content_type: str) -> None:
            self.send_header("content-type", content_type)
            self.send_header("request-id", f"req_fake_{next(fake._ids):04d}")
            for name, value in extra.items():
                self.send_header(name, value)

    return Handler


def judge_or(fake: FakeAnthropic, verdict: str = "YES\nsummary.md is there") -> list[dict[str, Any]]:
    """Answer judge calls with `verdict`, the others from the queue returned (then "Done.")."""
    queue: list[dict[str, Any]] = []
    fake.responder = lambda body: (
        {"text": verdict}
        if "independent judge" in str(body.get("system"))
        else (queue.pop(0) if queue else {"text": "Done."})
    )
    return queue


@pytest.fixture
def fake_anthropic(monkeypatch):
    """A started fake, with the SDK's environment pointed at it for the test's duration."""
    with FakeAnthropic() as fake:
        for name, value in fake.environ().items():
            monkeypatch.setenv(name, value)
        yield fake
