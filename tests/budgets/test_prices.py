"""The price table: a model's own row, or its family's for a dated id; never an elder's."""

from decimal import Decimal

from budgets.prices import PRICES, Price, cost, price_for


def test_dated_and_latest_ids_find_their_family():
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_for("claude-3-7-sonnet-latest") == PRICES["claude-3-7-sonnet"]
    assert price_for("claude-opus-4-1") == PRICES["claude-opus-4-1"]


def test_a_newer_generation_has_no_price_until_someone_sets_one():
    for model in ("claude-opus-4-7", "claude-sonnet-5", "claude-opus-5-5", "claude-sonnet-4-5-preview", "gpt-4"):
        assert price_for(model) is None, model
        assert cost(model, input=1000) is None
    table = {**PRICES, "claude-opus-4-7": Price(Decimal(5), Decimal(25), Decimal("0.5"), Decimal("6.25"))}
    assert cost("claude-opus-4-7-20261001", input=1_000_000, output=1_000_000, table=table) == Decimal(30)
