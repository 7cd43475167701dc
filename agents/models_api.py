"""The Models API: which models the API key can use, and each one's limits.

`client.models.list()` says which models the key can use, with each one's context window
(`max_input_tokens`), maximum output (`max_tokens`) and capabilities (effort levels, thinking
types). The list is kept in the Django cache for CACHE_SECONDS, so neither a page view nor a
model call asks the API each time; a failure is kept FAILURE_CACHE_SECONDS, so an API that
is down is not asked on every call either. An id the list does not name may be an alias
(`claude-sonnet-4-5` for a dated id): `client.models.retrieve()` resolves it, or answers 404
and the model is not one this key can use.

Where the API gives no maximum output for a model (the field is optional), KNOWN_LIMITS, a
small table by model family, does; `ModelFacts.limits_from` says which one spoke.

Without a key nothing here calls anything: offline scripted runs are unaffected.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.core.cache import cache

log = logging.getLogger(__name__)

CACHE_SECONDS = 600
FAILURE_CACHE_SECONDS = 30
TIMEOUT_SECONDS = 5.0
PAGE_SIZE = 100
# (context window, maximum output) by id prefix, longest prefix first: the fallback where the
# Models API gives no number. From Anthropic's published model overview.
KNOWN_LIMITS: dict[str, tuple[int, int]] = {
    "claude-opus-4-6": (200_000, 128_000),
    "claude-opus-4-5": (200_000, 64_000),
    "claude-opus-4-1": (200_000, 32_000),
    "claude-opus-4": (200_000, 32_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-haiku-4-5": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 64_000),
    "claude-3-5-haiku": (200_000, 8_192),
    "claude-3-haiku": (200_000, 4_096),
}
API, TABLE = "the Models API", "the known-limits table"


class ModelsApiError(Exception):
    """The Models API could not be asked (network, server, key): nothing is known."""


@dataclass(frozen=True)
class ModelFacts:
    id: str
    display_name: str = ""
    created: datetime | None = None
    context_window: int | None = None
    max_output: int | None = None
    effort: tuple[str, ...] = ()  # the effort levels the model takes; () none
    thinking: tuple[str, ...] = ()  # the thinking types it takes (adaptive, enabled)
    lifecycle: str = ""
    limits_from: str | None = None  # API, TABLE, or None: no number known

    @property
    def from_table(self) -> bool:
        return self.limits_from == TABLE


@dataclass(frozen=True)
class ModelsList:
    models: tuple[ModelFacts, ...] = ()
    error: str | None = None  # why the list could not be read, said plainly


def known_limits(model: str) -> tuple[int, int] | None:
    """(context window, maximum output) from KNOWN_LIMITS, or None. Pure."""
    for prefix in sorted(KNOWN_LIMITS, key=len, reverse=True):
        if model == prefix or model.startswith(prefix + "-"):
            return KNOWN_LIMITS[prefix]
    return None


def has_key() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY"))


@dataclass(frozen=True)
class Account:
    """Whose list: a key and base URL (None: the environment's, as the SDK reads them)."""

    api_key: str | None = None
    base_url: str | None = None

    @property
    def key(self) -> str:
        return self.api_key or os.environ.get("ANTHROPIC_API_KEY") or ""

    @property
    def url(self) -> str:
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ""


ENV = Account()


def facts_of(info: Any) -> ModelFacts:
    """ModelFacts from the SDK's ModelInfo; the table fills a maximum output the API left out."""
    caps = info.capabilities
    effort: tuple[str, ...] = ()
    thinking: tuple[str, ...] = ()
    if caps is not None and caps.effort.supported:
        levels = ("low", "medium", "high", "xhigh", "max")
        effort = tuple(n for n in levels if getattr(caps.effort, n, None) and getattr(caps.effort, n).supported)
    if caps is not None and caps.thinking.supported:
        types = ("adaptive", "enabled")
        thinking = tuple(n for n in types if getattr(caps.thinking.types, n).supported)
    facts = ModelFacts(
        id=info.id,
        display_name=info.display_name,
        created=info.created_at,
        context_window=info.max_input_tokens,
        max_output=info.max_tokens,
        effort=effort,
        thinking=thinking,
        lifecycle=info.lifecycle,
        limits_from=API if info.max_tokens else None,
    )
    return facts if facts.max_output else with_table(facts)


def with_table(facts: ModelFacts) -> ModelFacts:
    limits = known_limits(facts.id)
    if limits is None:
        return facts
    return replace(facts, context_window=facts.context_window or limits[0], max_output=limits[1], limits_from=TABLE)


# -- asking the API (cached) -----------------------------------------------------------------------


def _cache_key(account: Account, what: str) -> str:
    """Per key and base URL, never the key itself."""
    who = f"{account.url}|{account.key}"
    return f"rysh:models:{hashlib.sha256(who.encode()).hexdigest()[:16]}:{what}"


def _client(account: Account) -> Any:
    import anthropic  # the SDK loads only when a key asks the API (the scripted path never does)

    # base_url None: the SDK reads ANTHROPIC_BASE_URL
    return anthropic.Anthropic(api_key=account.key, base_url=account.base_url, max_retries=0, timeout=TIMEOUT_SECONDS)


def _problem(err: Exception) -> str:
    status = getattr(err, "status_code", None)
    said = getattr(err, "api_message", None) or type(err).__name__
    if status == 401:
        return "the Models API refused the key (401); check ANTHROPIC_API_KEY"
    if status is not None:
        return f"the Models API answered {status}: {said}"
    return f"the Models API could not be reached ({type(err).__name__})"


def available_models(account: Account = ENV, *, refresh: bool = False) -> ModelsList:
    """The models this key can use (newest first), cached; an empty list with the error when
    the API could not be asked, and with no key."""
    if not account.key:
        return ModelsList(error="the list of models needs an API key (ANTHROPIC_API_KEY)")
    key = _cache_key(account, "list")
    found = None if refresh else cache.get(key)
    if found is not None:
        return found
    try:
        found = ModelsList(models=tuple(facts_of(info) for info in _client(account).models.list(limit=PAGE_SIZE)))
        cache.set(key, found, CACHE_SECONDS)
    except Exception as err:  # noqa: BLE001 - any failure of the SDK call is said, never raised
        found = ModelsList(error=_problem(err))
        log.warning("models: %s", found.error)
        cache.set(key, found, FAILURE_CACHE_SECONDS)
    return found


def model_facts(model: str, account: Account = ENV) -> ModelFacts | None:
    """What the key can use under this id or alias, or None when the API says it cannot.
    Raises ModelsApiError when the API could not be asked."""
    listed = available_models(account)
    if listed.error:
        raise ModelsApiError(listed.error)
    for facts in listed.models:
        if facts.id == model:
            return facts
    key = _cache_key(account, f"id:{hashlib.sha256(model.encode()).hexdigest()[:16]}")
    found = cache.get(key)
    if found is not None:
        return found or None  # "" cached: the API said 404
    import anthropic  # for its error classes; loaded already by available_models()

    try:
        found = facts_of(_client(account).models.retrieve(model))
    except anthropic.NotFoundError:
        found = ""
    except Exception as err:  # noqa: BLE001
        raise ModelsApiError(_problem(err)) from None
    cache.set(key, found, CACHE_SECONDS)
    return found or None


def max_output(model: str, account: Account = ENV) -> int | None:
    """The most a call to `model` may ask for as max_tokens: the Models API's number when a key
    can ask it, else the table's; None when neither knows. Never raises."""
    if account.key:
        try:
            facts = model_facts(model, account)
        except ModelsApiError:
            facts = None
        if facts is not None and facts.max_output:
            return facts.max_output
    limits = known_limits(model)
    return limits[1] if limits else None


def cap_max_tokens(model: str, max_tokens: int, account: Account = ENV) -> int:
    """max_tokens never above the model's maximum output."""
    ceiling = max_output(model, account)
    return min(max_tokens, ceiling) if ceiling else max_tokens


def unusable(models: list[str]) -> str | None:
    """With a key: why the first of `models` the key cannot use is refused, or None. Silent
    when the API could not be asked (the unreachable case has its own preflight)."""
    if not has_key():
        return None
    for model in dict.fromkeys(m for m in models if m):
        try:
            if model_facts(model) is not None:
                continue
        except ModelsApiError:
            return None
        usable = ", ".join(f.id for f in available_models().models) or "none"
        return f"{model} is not a model this API key can use (models it can: {usable})"
    return None
