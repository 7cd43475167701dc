"""The Anthropic provider: one ModelRequest -> one streamed Messages API call.

Retries are ours, not the SDK's. The client is built with `max_retries=0` and this module
retries 429, 500-class, 529 (also an `overloaded_error` sent inside a stream), connection
errors and timeouts itself, with exponential backoff (0.5 s doubling, capped at 8 s, 25 %
jitter) or the server's `retry-after`. The SDK's own loop sleeps without knowing the
request's deadline, so it could overshoot it; ours refuses any wait that would end past
`request.deadline` and gives up with ModelError("... gave up after N attempts: <last cause>").
`max_retries` caps the retries as well (max_retries + 1 attempts at most).

Cancel and the deadline are watched from the calling thread. Each attempt runs in a worker
thread that streams the reply; the caller polls `request.cancelled()` and the clock every
50 ms. On cancel it raises ModelCancelled at once, even while the server has not sent a byte,
and the worker closes the stream at the next event it receives (or when its read timeout,
the time left to the deadline plus one second, expires), so an abandoned worker never
outlives the deadline by more than a second. A read-timeout loop would not do: a timed-out request cannot be
resumed, and a real first byte may take longer than any short timeout.

Prompt caching: `cache_control: ephemeral` on the system block, the last tool and the last
content block of the last message, on copies; breakpoints the caller left in its messages
are dropped so the request never has more than the API's four.

Messages are safe to show: status, error type and the API's own message, never the key
(scrubbed if it ever appears) nor a request body.
"""

from __future__ import annotations

import copy
import logging
import os
import random
import threading
import time
from typing import Any

import anthropic
import httpx2

from rysh_site import metrics, tracing

from .models_api import Account, cap_max_tokens
from .ports import ModelCancelled, ModelError, ModelReply, ModelRequest, Usage

log = logging.getLogger(__name__)

POLL_SECONDS = 0.05
BACKOFF_CAP_SECONDS = 8.0
RETRY_AFTER_CAP_SECONDS = 60.0
CONNECT_TIMEOUT_SECONDS = 10.0
COUNT_TIMEOUT_SECONDS = 10.0  # a count is a small request: it answers fast or not at all
COUNT_ATTEMPTS = 3
MISSING_KEY = (
    "ANTHROPIC_API_KEY is not set; export it (and ANTHROPIC_BASE_URL for a proxy) "
    "or use the scripted provider for offline runs"
)
# Status codes worth another attempt, and the error types that mean the same inside a stream
# (where the HTTP status is already 200).
RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504, 529}
STATUS_OF_TYPE = {"rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}
CAUSES = {429: "rate limited", 529: "overloaded", 408: "request timeout"}


class AnthropicModel:
    label = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        backoff_seconds: float = 0.5,
    ) -> None:
        self._api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        self._base_url = base_url  # None: the SDK reads ANTHROPIC_BASE_URL
        self._max_retries = max_retries
        self._backoff = backoff_seconds
        self._client: anthropic.Anthropic | None = None
        self._account = Account(api_key=self._api_key, base_url=base_url)

    def complete(self, request: ModelRequest) -> ModelReply:
        client = self._client_or_error()
        if request.max_tokens < 1:
            raise ModelError(f"max_tokens must be at least 1 (got {request.max_tokens})")
        params = build_params(request)
        # never above the model's maximum output (the Models API's number, cached; else the table)
        params["max_tokens"] = cap_max_tokens(request.model, params["max_tokens"], self._account)
        attempt, last_cause = 0, ""
        while True:
            attempt += 1
            try:
                return _to_reply(self._attempt(client, params, request))
            except _DeadlinePassed:
                before = f" (before that: {last_cause})" if last_cause else ""
                raise ModelError(f"Anthropic call {_gave_up(attempt)}: no reply before the deadline{before}") from None
            except _Unreadable as err:
                raise ModelError(f"Anthropic reply could not be read ({err})") from None
            except anthropic.APIError as err:
                last_cause = self._after_failure(err, attempt, request)

    def count_tokens(self, request: ModelRequest) -> int | None:
        """The exact input tokens of `request` from the Messages API's token-counting endpoint
        (free: nothing is billed), or None — the caller then keeps its byte bound, never a
        guess. Bounded: COUNT_ATTEMPTS tries of at most COUNT_TIMEOUT_SECONDS, never past
        the request's deadline."""
        if not self._api_key:
            return None
        params = build_params(request)
        del params["max_tokens"]  # the only argument of a call the endpoint does not take
        for attempt in range(1, COUNT_ATTEMPTS + 1):
            remaining = request.deadline - time.monotonic()
            if remaining <= 0 or request.cancelled():
                return None
            try:
                counted = self._client_or_error().messages.count_tokens(
                    **params, timeout=min(COUNT_TIMEOUT_SECONDS, remaining)
                )
                return int(counted.input_tokens)
            except anthropic.APIError as err:
                if not self._count_again(err, attempt, request):
                    return None
        return None

    def _count_again(self, err: anthropic.APIError, attempt: int, request: ModelRequest) -> bool:
        """After a failed count: sleep and say True when another attempt is worth it."""
        wait = _retry_after(err) or min(self._backoff * 2 ** (attempt - 1), BACKOFF_CAP_SECONDS)
        if not _retryable(err) or attempt >= COUNT_ATTEMPTS or time.monotonic() + wait >= request.deadline:
            log.warning(
                "anthropic: token count unavailable (%s); the byte bound stands",
                _cause(err) if _retryable(err) else self._scrub(_refusal_message(err)),
            )
            return False
        try:
            _sleep(wait, request)
        except ModelCancelled:
            return False
        return True

    # -- one attempt

    def _client_or_error(self) -> anthropic.Anthropic:
        if not self._api_key:
            raise ModelError(MISSING_KEY)
        if self._client is None:
            # An explicit key keeps the SDK from probing profiles and federation on disk.
            self._client = anthropic.Anthropic(api_key=self._api_key, base_url=self._base_url, max_retries=0)
        return self._client

    def _attempt(self, client: anthropic.Anthropic, params: dict[str, Any], request: ModelRequest) -> Any:
        if request.cancelled():
            raise ModelCancelled("the model call was cancelled")
        remaining = request.deadline - time.monotonic()
        if remaining <= 0:
            raise _DeadlinePassed()
        # The caller's clock ends the attempt at the deadline; the worker's own timeout is a
        # second later so it only bounds an abandoned worker's life.
        timeout = httpx2.Timeout(remaining + 1.0, connect=min(CONNECT_TIMEOUT_SECONDS, remaining))
        call = _StreamCall(client, params, timeout)
        call.start()
        while not call.done.wait(POLL_SECONDS):
            if request.cancelled():
                call.abandon()
                raise ModelCancelled("the model call was cancelled")
            if time.monotonic() >= request.deadline:
                call.abandon()
                raise _DeadlinePassed()
        return call.outcome()

    # -- after a failed attempt

    def _after_failure(self, err: anthropic.APIError, attempt: int, request: ModelRequest) -> str:
        """Sleep before the next attempt and return the cause, or raise ModelError when there
        should be no next attempt."""
        if not _retryable(err):
            raise ModelError(self._scrub(_refusal_message(err))) from None
        cause = _cause(err)
        wait = _retry_after(err)
        if wait is None:
            wait = min(self._backoff * 2 ** (attempt - 1), BACKOFF_CAP_SECONDS)
            wait *= 1 - 0.25 * random.random()
        if attempt > self._max_retries or time.monotonic() + wait >= request.deadline:
            raise ModelError(f"Anthropic call {_gave_up(attempt)}: {cause}") from None
        log.warning(
            "anthropic: %s; retrying in %.1fs (attempt %d of at most %d)",
            cause,
            wait,
            attempt + 1,
            self._max_retries + 1,
        )
        metrics.model_retry(request.model, request.purpose)
        tracing.model_retry(attempt, cause)
        _sleep(wait, request)
        return cause

    def _scrub(self, message: str) -> str:
        return message.replace(self._api_key, "***") if self._api_key else message


def _gave_up(attempts: int) -> str:
    return f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}"


class _DeadlinePassed(Exception):
    pass


class _StreamCall:
    """One streamed request in a worker thread, abandonable from the caller's thread."""

    def __init__(self, client: anthropic.Anthropic, params: dict[str, Any], timeout: httpx2.Timeout) -> None:
        self._client, self._params, self._timeout = client, params, timeout
        self.done = threading.Event()
        self._abandoned = threading.Event()
        self._message: Any = None
        self._error: BaseException | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, name="anthropic-call", daemon=True).start()

    def abandon(self) -> None:
        self._abandoned.set()

    def outcome(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._message

    def _run(self) -> None:
        try:
            with self._client.messages.stream(**self._params, timeout=self._timeout) as stream:
                for _event in stream:
                    if self._abandoned.is_set():
                        return  # leaving the `with` closes the stream and its connection
                self._message = stream.get_final_message()
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            self._error = _for_caller(err)
        finally:
            self.done.set()


class _Unreadable(Exception):
    """The SDK could not make sense of the reply (e.g. a tool's input JSON did not parse)."""


def _for_caller(err: BaseException) -> BaseException:
    if isinstance(err, anthropic.APIError) or not isinstance(err, (anthropic.AnthropicError, ValueError)):
        return err
    return _Unreadable(type(err).__name__)


def _sleep(seconds: float, request: ModelRequest) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if request.cancelled():
            raise ModelCancelled("the model call was cancelled")
        time.sleep(min(POLL_SECONDS, left))


# ---------------------------------------------------------------- classifying errors


def _status(err: anthropic.APIError) -> int | None:
    status = getattr(err, "status_code", None)
    if status is not None and status >= 400:
        return status
    return STATUS_OF_TYPE.get(getattr(err, "type", None) or "")  # an error event mid-stream


def _retryable(err: anthropic.APIError) -> bool:
    if isinstance(err, anthropic.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(err, anthropic.APIResponseValidationError):
        return False
    return _status(err) in RETRYABLE_STATUS


def _cause(err: anthropic.APIError) -> str:
    if isinstance(err, anthropic.APITimeoutError):
        return "timed out"
    if isinstance(err, anthropic.APIConnectionError):
        return "connection error"
    status = _status(err)
    return f"{CAUSES.get(status, 'server error')} ({status})"


def _refusal_message(err: anthropic.APIError) -> str:
    if isinstance(err, anthropic.APIResponseValidationError):
        return "Anthropic reply could not be read (it did not match the API's schema)"
    status = _status(err)
    kind = getattr(err, "type", None) or "error"
    said = getattr(err, "api_message", None)
    message = f"Anthropic API refused the request: {status} {kind}" + (f": {said}" if said else "")
    if status == 401:
        message += " (check ANTHROPIC_API_KEY)"
    return message


def _retry_after(err: anthropic.APIError) -> float | None:
    response = getattr(err, "response", None)
    if response is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(response.headers.get(name, "")) * scale
        except ValueError:
            continue  # absent, or an HTTP date: fall back to our backoff
        return min(max(value, 0.0), RETRY_AFTER_CAP_SECONDS)
    return None


# ---------------------------------------------------------------- request and reply shapes


def _ephemeral() -> dict[str, str]:
    return {"type": "ephemeral"}


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The Messages API arguments, with cache breakpoints on the stable prefix."""
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": cached_messages(request.messages),
    }
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": _ephemeral()}]
    if request.effort:
        # adaptive thinking at the recipe's effort; never `budget_tokens`, which models from
        # 4.7 on refuse (only models that take effort get one: budgets.efforts)
        params["thinking"] = {"type": "adaptive"}
        params["output_config"] = {"effort": request.effort}
    if request.tools:
        tools = [dict(tool) for tool in request.tools]
        tools[-1]["cache_control"] = _ephemeral()
        params["tools"] = tools
    return params


def cached_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A deep copy with exactly one breakpoint: on the last cacheable block of the last message."""
    copied = copy.deepcopy(messages)
    for message in copied:
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict):
                    block.pop("cache_control", None)
    if not copied:
        return copied
    last = copied[-1]
    if isinstance(last.get("content"), str):
        if not last["content"]:
            return copied  # the API refuses cache_control on empty text
        last["content"] = [{"type": "text", "text": last["content"]}]
    for block in reversed(last.get("content") or []):
        if _cacheable(block):
            block["cache_control"] = _ephemeral()
            break
    return copied


def _cacheable(block: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") in ("thinking", "redacted_thinking"):
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _to_reply(message: Any) -> ModelReply:
    usage = message.usage
    return ModelReply(
        content=[_block_dict(block) for block in message.content],
        stop_reason=message.stop_reason or "end_turn",
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_write_1h_tokens=getattr(getattr(usage, "cache_creation", None), "ephemeral_1h_input_tokens", 0) or 0,
        ),
    )


def _block_dict(block: Any) -> dict[str, Any]:
    """Plain API-shaped dicts, so a checkpoint is JSON and can be sent back as is."""
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    # thinking is sent back exactly as received: its signature vouches for its text
    if block.type == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if block.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return block.to_dict()
