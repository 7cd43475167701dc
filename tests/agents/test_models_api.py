"""The Models API facts (agents.models_api), through the real SDK against the fake server: the
cached list, aliases, errors, the known-limits table, and max_tokens capped in the provider."""

from __future__ import annotations

import time

import pytest

from agents import models_api
from agents.anthropic_model import AnthropicModel
from agents.ports import ModelRequest
from tests.fakes.anthropic_server import fake_anthropic, model_info  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("fresh_cache")


def test_without_a_key_nothing_is_asked(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    listed = models_api.available_models()
    assert listed.models == () and "needs an API key" in listed.error
    assert models_api.unusable(["claude-x-9"]) is None
    assert models_api.max_output("claude-3-haiku-20240307") == 4096  # the table still speaks


def test_the_list_has_the_api_facts_and_is_cached(fake_anthropic):
    listed = models_api.available_models()
    assert listed.error is None
    opus = listed.models[0]
    assert (opus.id, opus.display_name, opus.created.year) == ("claude-opus-4-7", "Claude Opus 4.7", 2026)
    assert (opus.context_window, opus.max_output, opus.limits_from) == (200_000, 128_000, models_api.API)
    assert opus.effort == ("low", "medium", "high", "max") and opus.thinking == ("adaptive", "enabled")
    models_api.available_models()
    assert len(fake_anthropic.models_requests) == 1  # the second read came from the cache


def test_the_table_fills_a_maximum_output_the_api_left_out(fake_anthropic):
    fake_anthropic.models = [model_info("claude-opus-4-1-20250805", max_tokens=None, effort=False, thinking=False)]
    (facts,) = models_api.available_models().models
    assert (facts.max_output, facts.limits_from) == (32_000, models_api.TABLE)
    assert facts.effort == () and facts.thinking == ()


def test_an_alias_resolves_and_an_unknown_model_is_named_with_what_the_key_can_use(fake_anthropic):
    assert models_api.model_facts("claude-haiku-4-5").id == "claude-haiku-4-5-20251001"
    assert models_api.unusable(["claude-sonnet-4-6", "claude-haiku-4-5"]) is None
    message = models_api.unusable(["claude-x-9"])
    assert message.startswith("claude-x-9 is not a model this API key can use (models it can: claude-opus-4-7, ")
    models_api.unusable(["claude-x-9"])
    asked = [r.path.split("?")[0] for r in fake_anthropic.models_requests]
    assert asked == ["/v1/models", "/v1/models/claude-haiku-4-5", "/v1/models/claude-x-9"]  # 404 cached too


def test_an_api_error_is_said_plainly_and_refuses_nothing(fake_anthropic):
    fake_anthropic.fail_next_models(500)
    listed = models_api.available_models()
    assert listed.models == () and listed.error == "the Models API answered 500: Internal server error"
    assert models_api.unusable(["claude-x-9"]) is None  # unknown is not "cannot use"
    assert models_api.available_models(refresh=True).error is None


def test_a_bad_key_says_so(fake_anthropic):
    fake_anthropic.api_keys = {"another"}
    assert "refused the key (401)" in models_api.available_models().error


def request(model: str, max_tokens: int) -> ModelRequest:
    return ModelRequest(
        model=model,
        system="s",
        messages=[{"role": "user", "content": "hi"}],
        tools=[],
        max_tokens=max_tokens,
        deadline=time.monotonic() + 10,
    )


def test_the_provider_never_asks_max_tokens_above_the_models_maximum_output(fake_anthropic):
    fake_anthropic.models.insert(0, model_info("claude-small-1", max_tokens=4096))
    model = AnthropicModel(backoff_seconds=0.01)
    model.complete(request("claude-small-1", 8192))
    model.complete(request("claude-small-1", 1000))
    model.complete(request("claude-3-haiku-20240307", 8192))  # not in the list: the table's 4096
    model.complete(request("claude-opus-4-7", 8192))
    assert [r.json["max_tokens"] for r in fake_anthropic.requests] == [4096, 1000, 4096, 8192]
