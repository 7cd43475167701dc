"""Exact input counts (the token-counting endpoint, the scripted arithmetic): what the engine
asks near the edge of a budget instead of trusting only its byte bound."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.anthropic_model import COUNT_ATTEMPTS, AnthropicModel
from agents.ports import ModelRequest
from agents.scripted import ScriptedModel
from tests.agents.test_anthropic_model import KEY, TOOLS, fake, model, request  # noqa: F401 (fixtures)


def page_request(kb: int) -> ModelRequest:
    page = "A line of a page of text that a browsing agent read. " * (kb * 1024 // 54)
    messages = [
        {"role": "user", "content": "Read the page."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "fetch", "input": {"url": "https://example.org"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": page}]},
    ]
    return request(messages=messages)


def test_it_counts_what_a_call_of_the_same_request_then_reads(fake, model):
    counted = model.count_tokens(page_request(20))
    reply = model.complete(page_request(20))
    assert counted == reply.usage.context  # every input token, cached or not
    assert counted < 20 * 1024 // 3  # ~4 bytes a token: far under the byte bound
    assert fake.calls == 1 and len(fake.count_requests) == 1  # a count is not a Messages call
    assert "max_tokens" not in fake.count_requests[0].json


def test_it_retries_a_failed_count_then_answers(fake, model):
    fake.fail_next_count(529, times=COUNT_ATTEMPTS - 1)
    assert model.count_tokens(request()) is not None
    assert len(fake.count_requests) == COUNT_ATTEMPTS


def test_it_gives_up_after_bounded_attempts_and_says_none_never_a_guess(fake, model, caplog):
    fake.fail_next_count(500, times=COUNT_ATTEMPTS + 5)
    assert model.count_tokens(request()) is None
    assert len(fake.count_requests) == COUNT_ATTEMPTS
    assert "byte bound stands" in caplog.text and KEY not in caplog.text


def test_a_refused_count_is_not_retried(fake, model):
    fake.fail_next_count(400)
    assert model.count_tokens(request()) is None
    assert len(fake.count_requests) == 1


def test_no_key_no_time_or_a_cancel_means_no_count(fake):
    assert AnthropicModel(api_key=None, base_url=fake.base_url).count_tokens(request()) is None
    model = AnthropicModel(api_key=KEY, base_url=fake.base_url)
    assert model.count_tokens(request(deadline=time.monotonic() - 1)) is None
    assert model.count_tokens(request(cancelled=lambda: True)) is None
    assert fake.count_requests == []


SCRIPT = {"passes": [{"task": [{"text": "done"}], "judge": "YES\nok"}]}
texts = st.text(min_size=0, max_size=400)


@settings(max_examples=50, deadline=None)
@given(system=texts, turns=st.lists(texts, min_size=1, max_size=6))
def test_the_scripted_count_is_the_context_its_call_reports(system, turns):
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": t}]}
        for i, t in enumerate(turns)
    ]
    ask = ModelRequest(
        model="scripted", system=system, messages=messages, tools=TOOLS, max_tokens=100, deadline=time.monotonic() + 10
    )
    scripted = ScriptedModel(SCRIPT)
    assert scripted.count_tokens(ask) == scripted.complete(ask).usage.context
