"""The fake Anthropic server itself: shapes, auth, usage arithmetic."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.anthropic_server import FakeAnthropic, PromptCache, fake_anthropic  # noqa: F401

EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def client(fake):
    return anthropic.Anthropic(api_key="test-key", base_url=fake.base_url, max_retries=0)


def post(fake, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"{fake.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


BODY = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}


def test_missing_key_is_401(fake):
    status, body = post(fake, BODY, {})
    assert status == 401
    assert body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "x-api-key header is required"},
    }
    assert post(fake, BODY, {"x-api-key": "k"})[0] == 200


def test_json_reply_and_default(fake, client):
    fake.reply(text="one", tool_calls=[{"name": "t", "input": {"a": 1}}], output_tokens=9)
    first = client.messages.create(**BODY)
    assert [b.type for b in first.content] == ["text", "tool_use"]
    assert first.stop_reason == "tool_use" and first.usage.output_tokens == 9
    second = client.messages.create(**BODY)
    assert second.content[0].text == "done" and second.stop_reason == "end_turn"
    assert fake.calls == 2 and fake.requests[0].json["messages"] == BODY["messages"]


def test_stream_matches_json(fake, client):
    fake.responder = lambda body: {"text": "échos " * 20, "tool_calls": [{"name": "t", "input": {"q": "ü" * 40}}]}
    body = dict(BODY, max_tokens=1000)
    plain = client.messages.create(**body)
    with client.messages.stream(**body) as stream:
        streamed = stream.get_final_message()
    assert plain.stop_reason == streamed.stop_reason == "tool_use"
    assert streamed.content[0].text == plain.content[0].text
    assert streamed.content[1].input == plain.content[1].input
    assert streamed.usage.output_tokens == plain.usage.output_tokens


def test_errors_have_the_api_shape(fake, client):
    fake.fail_next(429, retry_after=3)
    with pytest.raises(anthropic.RateLimitError) as err:
        client.messages.create(**BODY)
    assert err.value.type == "rate_limit_error" and err.value.response.headers["retry-after"] == "3"
    fake.fail_next(529)
    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(**BODY)
    fake.fail_next(529, mid_stream=True)
    with pytest.raises(anthropic.APIStatusError) as err:
        with client.messages.stream(**BODY) as stream:
            stream.get_final_message()
    assert err.value.type == "overloaded_error"


def test_more_than_four_breakpoints_is_400(fake, client):
    blocks = [{"type": "text", "text": str(i), "cache_control": EPHEMERAL} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(**dict(BODY, messages=[{"role": "user", "content": blocks}]))


def test_max_tokens_truncates(fake, client):
    fake.reply(text="abcd" * 100, tool_calls=[{"name": "t", "input": {}}])
    reply = client.messages.create(**dict(BODY, max_tokens=3))
    assert reply.stop_reason == "max_tokens" and reply.usage.output_tokens == 3
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text == "abcd" * 3


def conversation(turns: int, system: str = "S" * 400) -> dict:
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i} " * 10}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i} " * 10}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "last", "cache_control": EPHEMERAL}]})
    return {
        "model": "m",
        "max_tokens": 10,
        "messages": messages,
        "system": [{"type": "text", "text": system, "cache_control": EPHEMERAL}],
    }


def test_cache_write_then_read():
    cache = PromptCache()
    first = cache.usage(conversation(1))
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 0
    assert first["input_tokens"] == 0  # nothing after the last breakpoint
    again = cache.usage(conversation(1))
    assert again["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert again["cache_creation_input_tokens"] == 0
    # Written prefixes end at breakpoints: the system block and "last". A conversation that
    # goes on from the first turn without "last" shares only the system block with them.
    grown = cache.usage(conversation(2))
    assert 0 < grown["cache_read_input_tokens"] < first["cache_creation_input_tokens"]
    other_system = cache.usage(conversation(1, system="T" * 400))
    assert other_system["cache_read_input_tokens"] == 0


texts = st.text(max_size=300)
blocks = st.lists(
    st.builds(
        lambda t, c: dict({"type": "text", "text": t}, **({"cache_control": EPHEMERAL} if c else {})),
        texts,
        st.booleans(),
    ),
    min_size=1,
    max_size=4,
)
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.one_of(texts, blocks)}),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(messages=messages, system=texts)
def test_input_never_exceeds_the_request_bytes(messages, system):
    cache = PromptCache()
    body = {"model": "m", "max_tokens": 10, "messages": messages, "system": system}
    for _ in range(2):  # cold, then warm
        usage = cache.usage(body)
        assert min(usage.values()) >= 0
        assert sum(usage.values()) <= len(json.dumps(body).encode()) + 2048


def test_the_fixture_points_the_sdk_at_the_fake(fake_anthropic):
    fake_anthropic.responder = lambda body: (fake_anthropic.fail_next(500), {"text": "hi"})[1]
    client = anthropic.Anthropic(max_retries=0)  # key and base URL from the environment
    assert client.messages.create(**BODY).content[0].text == "hi"
    with pytest.raises(anthropic.InternalServerError):  # the responder queued it
        client.messages.create(**BODY)


def test_the_models_api_reads_in_the_sdk(fake, client):
    fake.models = fake.models[:3]
    listed = list(client.models.list(limit=2))  # two pages, followed by the SDK
    assert [m.id for m in listed] == ["claude-opus-4-7", "claude-sonnet-4-6", "claude-opus-4-6"]
    first = listed[0]
    assert first.display_name == "Claude Opus 4.7" and first.created_at.year == 2026
    assert first.max_tokens == 128_000 and first.max_input_tokens == 200_000
    assert first.capabilities.effort.supported and first.capabilities.thinking.types.adaptive.supported
    assert [r.path.split("?")[0] for r in fake.models_requests] == ["/v1/models", "/v1/models"]
    assert fake.calls == 0  # not Messages calls


def test_a_model_is_retrieved_by_id_or_alias_and_an_unknown_one_is_404(fake, client):
    assert client.models.retrieve("claude-haiku-4-5").id == "claude-haiku-4-5-20251001"
    assert client.models.retrieve("claude-sonnet-4-6").display_name == "Claude Sonnet 4.6"
    with pytest.raises(anthropic.NotFoundError) as err:
        client.models.retrieve("claude-x-9")
    assert err.value.body["error"] == {"type": "not_found_error", "message": "model: claude-x-9"}
    fake.fail_next_models(500)
    with pytest.raises(anthropic.InternalServerError):
        client.models.list()
