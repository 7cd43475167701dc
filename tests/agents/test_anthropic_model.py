"""The Anthropic provider, driven through the real SDK against the fake server on loopback."""

from __future__ import annotations

import copy
import logging
import socket
import threading
import time

import pytest

from agents.anthropic_model import AnthropicModel
from agents.ports import ModelCancelled, ModelError, ModelRequest
from tests.fakes.anthropic_server import FakeAnthropic

KEY = "sk-ant-test-secret-0123456789"
TOOLS = [
    {
        "name": "save_result",
        "description": "Save a file.",
        "input_schema": {"type": "object", "properties": {"filename": {"type": "string"}}},
    },
    {
        "name": "fetch",
        "description": "Fetch a URL.",
        "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
]


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def model(fake):
    return AnthropicModel(api_key=KEY, base_url=fake.base_url, backoff_seconds=0.01)


def request(seconds: float = 10.0, **overrides) -> ModelRequest:
    fields = dict(
        model="claude-fake-1",
        system="You are careful.",
        tools=TOOLS,
        messages=[{"role": "user", "content": "Find five sources."}],
        max_tokens=1000,
        deadline=time.monotonic() + seconds,
    )
    fields.update(overrides)
    return ModelRequest(**fields)


def cancel_after(seconds: float) -> tuple[threading.Event, list[float]]:
    """A cancel flag that rises after `seconds`; the list gets the moment it rose."""
    flag, raised_at = threading.Event(), []

    def rise() -> None:
        raised_at.append(time.monotonic())
        flag.set()

    threading.Timer(seconds, rise).start()
    return flag, raised_at


def test_text_reply(fake, model):
    fake.reply(text="Here are the sources.")
    reply = model.complete(request())
    assert model.label == "anthropic"
    assert reply.content == [{"type": "text", "text": "Here are the sources."}]
    assert reply.stop_reason == "end_turn"
    assert fake.requests[0].stream  # always streamed, so cancel can be polled


def test_tool_use_reply(fake, model):
    fake.reply(text="Saving.", tool_calls=[{"name": "save_result", "input": {"filename": "a.md"}}])
    reply = model.complete(request())
    assert reply.stop_reason == "tool_use"
    assert reply.text == "Saving."
    [call] = reply.tool_calls
    assert call["type"] == "tool_use" and call["id"].startswith("toolu_")
    assert (call["name"], call["input"]) == ("save_result", {"filename": "a.md"})


def test_usage_reads_the_cache_on_the_second_call(fake, model):
    fake.reply(text="first", output_tokens=7)
    first = model.complete(request()).usage
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert first.output_tokens == 7
    messages = [
        {"role": "user", "content": "Find five sources."},
        {"role": "assistant", "content": [{"type": "text", "text": "first"}]},
        {"role": "user", "content": "continue"},
    ]
    second = model.complete(request(messages=messages)).usage
    assert second.cache_read_tokens == first.cache_write_tokens + first.cache_read_tokens
    assert second.cache_write_tokens > 0  # the two new turns
    assert second.context > first.context


def test_cache_control_on_system_last_tool_and_last_block_without_mutating(fake, model):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "old", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]
    before, tools_before = copy.deepcopy(messages), copy.deepcopy(TOOLS)
    model.complete(request(messages=messages))
    sent = fake.requests[0].json
    assert sent["system"] == [{"type": "text", "text": "You are careful.", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in sent["tools"][0]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in sent["messages"][0]["content"][0]  # ours are the only ones
    assert "cache_control" not in sent["messages"][-1]["content"][0]
    assert sent["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert messages == before and TOOLS == tools_before


def test_string_content_becomes_a_cached_block(fake, model):
    model.complete(request(system="", tools=[]))
    sent = fake.requests[0].json
    assert "system" not in sent and "tools" not in sent
    assert sent["messages"][-1]["content"] == [
        {"type": "text", "text": "Find five sources.", "cache_control": {"type": "ephemeral"}}
    ]


def test_429_then_success_honours_retry_after(fake, model):
    fake.fail_next(429, retry_after=1)
    started = time.monotonic()
    assert model.complete(request()).text == "done"
    assert time.monotonic() - started >= 1.0
    assert fake.calls == 2


def test_500_is_retried(fake, model):
    fake.fail_next(500, times=2)
    assert model.complete(request()).text == "done"
    assert fake.calls == 3


def test_overloaded_inside_the_stream_is_retried(fake, model):
    fake.fail_next(529, mid_stream=True)
    assert model.complete(request()).text == "done"
    assert fake.calls == 2


def test_529_retried_until_the_deadline(fake):
    model = AnthropicModel(api_key=KEY, base_url=fake.base_url, max_retries=100, backoff_seconds=0.2)
    fake.fail_next(529, times=1000)
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"gave up after \d+ attempts: overloaded \(529\)") as err:
        model.complete(request(seconds=1.5))
    assert time.monotonic() - started < 1.5
    assert fake.calls >= 3
    assert f"after {fake.calls} attempts" in str(err.value)


def test_max_retries_caps_the_attempts(fake):
    model = AnthropicModel(api_key=KEY, base_url=fake.base_url, max_retries=2, backoff_seconds=0.01)
    fake.fail_next(529, times=10)
    with pytest.raises(ModelError, match=r"gave up after 3 attempts: overloaded \(529\)"):
        model.complete(request())
    assert fake.calls == 3


def test_a_retry_after_past_the_deadline_gives_up_at_once(fake, model):
    fake.fail_next(429, retry_after=30)
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"gave up after 1 attempt: rate limited \(429\)"):
        model.complete(request(seconds=5))
    assert time.monotonic() - started < 1


def test_connection_errors_are_retried(fake):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    model = AnthropicModel(api_key=KEY, base_url=f"http://127.0.0.1:{port}", max_retries=2, backoff_seconds=0.01)
    with pytest.raises(ModelError, match="gave up after 3 attempts: connection error"):
        model.complete(request())


def test_401_is_not_retried_and_never_shows_the_key(caplog):
    caplog.set_level(logging.DEBUG)
    with FakeAnthropic(api_keys={"the-right-key"}) as fake:
        model = AnthropicModel(api_key=KEY, base_url=fake.base_url)
        with pytest.raises(ModelError) as err:
            model.complete(request())
    message = str(err.value)
    assert "401" in message and "authentication_error" in message and "invalid x-api-key" in message
    assert KEY not in message and KEY not in caplog.text
    assert "Find five sources" not in message
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert fake.calls == 1


def test_400_is_not_retried(fake, model):
    fake.fail_next(400, message="messages: roles must alternate")
    with pytest.raises(ModelError, match="400 invalid_request_error: messages: roles must alternate"):
        model.complete(request())
    assert fake.calls == 1


def test_missing_key_says_what_to_do(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY is not set.*scripted provider"):
        AnthropicModel(base_url="http://127.0.0.1:9").complete(request())


def test_key_and_base_url_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    assert AnthropicModel().complete(request()).text == "done"
    assert fake.requests[0].headers.get("authorization") == f"Bearer {KEY}"


def test_max_tokens_truncates(fake, model):
    fake.reply(text="word " * 200, tool_calls=[{"name": "save_result", "input": {"filename": "a"}}])
    reply = model.complete(request(max_tokens=5))
    assert reply.stop_reason == "max_tokens"
    assert reply.tool_calls == []
    assert reply.usage.output_tokens == 5
    assert len(reply.text.encode()) <= 20


def test_cancel_mid_stream(fake, model):
    fake.reply(text="x" * 800)  # 50 text deltas
    fake.delay_next(0, between_events=0.2)
    flag, raised_at = cancel_after(0.5)
    with pytest.raises(ModelCancelled):
        model.complete(request(cancelled=flag.is_set))
    assert time.monotonic() - raised_at[0] < 0.5
    waited = time.monotonic() + 5
    while fake.aborted_streams == 0 and time.monotonic() < waited:
        time.sleep(0.05)
    assert fake.aborted_streams == 1  # the stream was closed, not read to the end


def test_cancel_while_waiting_for_the_first_byte(fake, model):
    fake.delay_next(30)
    flag, raised_at = cancel_after(0.3)
    with pytest.raises(ModelCancelled):
        model.complete(request(cancelled=flag.is_set))
    assert time.monotonic() - raised_at[0] < 0.5


def test_cancel_during_backoff(fake, model):
    fake.fail_next(429, retry_after=20)
    flag, raised_at = cancel_after(0.3)
    with pytest.raises(ModelCancelled):
        model.complete(request(seconds=60, cancelled=flag.is_set))
    assert time.monotonic() - raised_at[0] < 0.5
    assert fake.calls == 1


def test_already_cancelled_sends_nothing(fake, model):
    with pytest.raises(ModelCancelled):
        model.complete(request(cancelled=lambda: True))
    assert fake.calls == 0


def test_deadline_bounds_a_slow_server(fake, model):
    fake.delay_next(30)
    started = time.monotonic()
    with pytest.raises(ModelError, match="gave up after 1 attempt: no reply before the deadline"):
        model.complete(request(seconds=1.0))
    assert time.monotonic() - started < 1.3


def test_deadline_bounds_a_trickling_stream(fake, model):
    fake.reply(text="y" * 800)
    fake.delay_next(0, between_events=0.2)
    started = time.monotonic()
    with pytest.raises(ModelError, match="no reply before the deadline"):
        model.complete(request(seconds=1.0))
    assert time.monotonic() - started < 1.3


def test_the_deadline_message_keeps_the_earlier_cause(fake, model):
    fake.fail_next(529)
    fake.delay_next(0)  # the 529 itself
    fake.delay_next(30)
    started = time.monotonic()
    with pytest.raises(
        ModelError,
        match=r"gave up after 2 attempts: no reply before the deadline "
        r"\(before that: overloaded \(529\)\)",
    ):
        model.complete(request(seconds=1.0))
    assert time.monotonic() - started < 1.3
