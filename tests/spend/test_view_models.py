"""The Prices page as "Models and prices": with an API key, the models the key can use (the
real SDK against the fake Models API, cached) with their limits and price rows."""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_server import fake_anthropic, model_info  # noqa: F401 (fixture)
from tests.runs.test_view_runs import client_for, user_with
from tests.spend.test_selectors import fresh_prices  # noqa: F401
from tests.spend.test_view_prices import row

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def viewer():
    return client_for(user_with("viewer"))


def test_with_a_key_it_lists_the_models_with_limits_and_prices(fake_anthropic, viewer):
    fake_anthropic.models.append(model_info("claude-opus-4-1-20250805", "Claude Opus 4.1", max_tokens=None))
    page = viewer.get("/prices/").content.decode()
    assert "<h1>Models and prices</h1>" in page
    opus = row(page, "model-claude-opus-4-7")
    assert "<td>Claude Opus 4.7</td>" in opus and "<td>2026-04-01</td>" in opus
    assert "<td>200000</td>" in opus and "<td>128000</td>" in opus
    assert "<td>low, medium, high, max</td>" in opus and "<td>adaptive, enabled</td>" in opus
    sonnet = row(page, "model-claude-sonnet-4-5-20250929")
    assert "<td>$3.00</td><td>$15.00</td><td>$0.30</td><td>$3.75</td>" in sonnet
    assert "as <code>claude-sonnet-4-5</code>" in sonnet
    assert '32000 <span class="muted small">table</span>' in row(page, "model-claude-opus-4-1-20250805")
    assert 'id="price-claude-sonnet-4-5"' in page  # the price list stays below
    viewer.get("/prices/")
    assert len(fake_anthropic.models_requests) == 1  # cached between views


def test_an_api_error_is_said_and_the_prices_stay(fake_anthropic, viewer):
    fake_anthropic.fail_next_models(529)
    page = viewer.get("/prices/").content.decode()
    assert 'id="models-error"' in page and "the Models API answered 529: Overloaded" in page
    assert "No models listed." in page and 'id="price-claude-sonnet-4-5"' in page


def test_without_a_key_the_page_is_the_price_list_and_says_the_list_needs_one(viewer, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    page = viewer.get("/prices/").content.decode()
    assert "<h1>Prices</h1>" in page and 'id="api-models"' not in page
    assert 'id="models-need-key"' in page and "ANTHROPIC_API_KEY" in page
    assert 'id="price-claude-sonnet-4-5"' in page
