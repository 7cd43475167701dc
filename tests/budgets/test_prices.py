"""The price table: a model's own row, or its family's for a dated id; never an elder's. The two
cache-write durations are priced apart; a tiered model bills the whole request at its prompt's tier."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from budgets.prices import CURRENT, HAIKU_5_5_TIER, PRICES, Price, cost, counted_ceiling_cost, price_for

tokens = st.integers(min_value=0, max_value=2_000_000)


def test_dated_and_latest_ids_find_their_family():
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_for("claude-3-7-sonnet-latest") == PRICES["claude-3-7-sonnet"]
    assert price_for("claude-opus-4-1") == PRICES["claude-opus-4-1"]
    assert price_for("claude-sonnet-5-5-20261101") == PRICES["claude-sonnet-5-5"]


def test_a_newer_generation_has_no_price_until_someone_sets_one():
    for model in ("claude-opus-4-9", "claude-fable-5-2", "claude-sonnet-5-6", "claude-sonnet-4-5-preview", "gpt-4"):
        assert price_for(model) is None, model
        assert cost(model, input=1000) is None
    table = {**PRICES, "claude-opus-4-9": Price(Decimal(5), Decimal(25), Decimal("0.5"), Decimal("6.25"))}
    assert cost("claude-opus-4-9-20261001", input=1_000_000, output=1_000_000, table=table) == Decimal(30)


def test_the_current_lineup_at_anthropics_prices_each_row_with_its_source():
    expect = {  # input / output / 5-minute write / 1-hour write / cache read
        "claude-fable-5-1": ("10", "50", "12.50", "20", "0.25"),
        "claude-opus-5-5": ("4", "20", "5", "8", "0.20"),
        "claude-sonnet-5-5": ("2", "10", "2.50", "4", "0.20"),
        "claude-haiku-5-5": ("0.10", "0.50", "0.125", "0.20", "0.01"),
        "claude-opus-5": ("5", "25", "6.25", "10", "0.50"),
        "claude-sonnet-5": ("2", "10", "2.50", "4", "0.20"),
        "claude-fable-5": ("10", "50", "12.50", "20", "1.00"),
        "claude-opus-4-8": ("5", "25", "6.25", "10", "0.50"),
        "claude-opus-4-7": ("5", "25", "6.25", "10", "0.50"),
        "claude-opus-4-6": ("5", "25", "6.25", "10", "0.50"),
        "claude-opus-4-5": ("5", "25", "6.25", "10", "0.50"),
        "claude-sonnet-4-6": ("3", "15", "3.75", "6", "0.30"),
        "claude-haiku-4-5": ("1", "5", "1.25", "2", "0.10"),
    }
    for model, rates in expect.items():
        p = PRICES[model]
        assert (p.input, p.output, p.cache_write, p.write_1h, p.cache_read) == tuple(map(Decimal, rates)), model
        assert p.source.startswith(CURRENT), model
    above = PRICES["claude-haiku-5-5"].above
    assert (above.input, above.output, above.cache_write, above.write_1h, above.cache_read) == tuple(
        map(Decimal, ("0.50", "2.50", "0.625", "1.00", "0.05"))
    )
    for model, p in PRICES.items():
        assert p.source, model
        if model not in expect:  # the older rows: the 1-hour write by Anthropic's rule, and said so
            assert p.write_1h == 2 * p.input and "2 × input" in p.source, model


def test_the_haiku_5_5_tier_is_the_whole_requests_by_its_prompt():
    at_tier = cost("claude-haiku-5-5", input=60_000, cache_read=30_000, cache_write=10_000, output=50_000)
    assert (
        at_tier
        == (60_000 * Decimal("0.10") + 30_000 * Decimal("0.01") + 10_000 * Decimal("0.125") + 50_000 * Decimal("0.50"))
        / 1_000_000
    )
    over = cost("claude-haiku-5-5", input=60_000, cache_read=30_000, cache_write=10_001, output=50_000)
    assert (
        over
        == (60_000 * Decimal("0.50") + 30_000 * Decimal("0.05") + 10_001 * Decimal("0.625") + 50_000 * Decimal("2.50"))
        / 1_000_000
    )


def test_one_hour_writes_are_priced_at_the_one_hour_rate():
    assert cost("claude-sonnet-5-5", cache_write=1_000_000, cache_write_1h=400_000) == Decimal(
        "2.50"
    ) * 6 / 10 + 4 * Decimal("0.4")
    assert cost("claude-sonnet-4-5", cache_write=1_000_000, cache_write_1h=1_000_000) == Decimal(6)  # 2 × input
    admin = {"x-model": Price(Decimal(3), Decimal(15), Decimal("0.3"), Decimal("3.75"))}  # no 1-hour rate given
    assert cost("x-model", cache_write=1_000_000, cache_write_1h=1_000_000, table=admin) == Decimal(6)


@given(model=st.sampled_from(sorted(PRICES)), i=tokens, o=tokens, r=tokens, w=tokens, w1h=tokens)
def test_a_request_never_costs_more_than_its_counted_tokens_at_their_ceiling_plus_its_reads(model, i, o, r, w, w1h):
    w1h = min(w1h, w)
    price = PRICES[model]
    spent = cost(model, input=i, output=o, cache_read=r, cache_write=w, cache_write_1h=w1h)
    assert spent >= 0
    tier = price.for_bound(i + w + r)
    assert spent <= ((i + o + w) * tier.counted_max + r * tier.cache_read) / 1_000_000
    assert spent <= counted_ceiling_cost(model, i + o + w + r) + r * max(p.cache_read for p in price.tiers) / 1_000_000


@given(model=st.sampled_from(sorted(PRICES)), i=tokens, o=tokens, r=tokens, w=tokens, more=tokens)
def test_more_one_hour_writes_never_cost_less_and_change_nothing_counted(model, i, o, r, w, more):
    less = cost(model, input=i, output=o, cache_read=r, cache_write=w, cache_write_1h=w // 2)
    most = cost(model, input=i, output=o, cache_read=r, cache_write=w, cache_write_1h=min(w, w // 2 + more))
    assert most >= less


@given(bound=tokens, prompt=tokens)
def test_a_bound_is_priced_at_the_tier_it_can_reach(bound, prompt):
    """No prompt within a bound is billed dearer than the tier the bound is priced at."""
    haiku = PRICES["claude-haiku-5-5"]
    reserved = haiku.for_bound(bound).counted_max
    if prompt <= bound:
        assert haiku.at(prompt).counted_max <= reserved
    assert (reserved == haiku.above.counted_max) == (bound > HAIKU_5_5_TIER)
    assert haiku.for_bound(None) == haiku.above


def test_dearest_rates():
    assert PRICES["claude-opus-5-5"].counted_max == Decimal(20)
    assert counted_ceiling_cost("claude-haiku-5-5", 100_000) == Decimal("0.05")
    assert counted_ceiling_cost("claude-haiku-5-5", 100_001) == Decimal("2.50") * 100_001 / 1_000_000
