"""Per-model prices, USD per million tokens. One table: update it here when prices change,
with where each row comes from and when.

Money is computed beside tokens, never instead of them: an unknown model shows
tokens only (cost() returns None).

Cache writes are priced by how long they are kept: a 5-minute write (`cache_write`) and a
1-hour one (`cache_write_1h`; Anthropic's rule where a row does not say: 2 × input). A tiered
model (Haiku 5.5) bills the whole request at the tier of its prompt (input + cache write +
cache read tokens of that request): up to `tier_tokens` at its own rates, above at `above`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

MILLION = Decimal(1_000_000)
DATED = re.compile(r"-(\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal  # 5-minute cache writes
    cache_write_1h: Decimal | None = None  # 1-hour cache writes; None: 2 × input (Anthropic's rule)
    source: str = ""  # where the row comes from, and when
    tier_tokens: int | None = None  # a tiered model: prompts above this many tokens cost `above`
    above: Price | None = None

    @property
    def write_1h(self) -> Decimal:
        return self.input * 2 if self.cache_write_1h is None else self.cache_write_1h

    @property
    def tiers(self) -> tuple[Price, ...]:
        return (self,) if self.above is None else (self, *self.above.tiers)

    def at(self, prompt_tokens: int) -> Price:
        """The rates a request whose prompt is `prompt_tokens` is billed at (the whole request)."""
        if self.above is not None and self.tier_tokens is not None and prompt_tokens > self.tier_tokens:
            return self.above.at(prompt_tokens)
        return self

    def for_bound(self, tokens: int | None) -> Price:
        """The dearest rates a call whose prompt may reach `tokens` can be billed at (None: any
        prompt). Tiers only get dearer, so the tier of the bound itself."""
        if tokens is None:
            return max(self.tiers, key=lambda p: p.counted_max)
        return self.at(tokens)

    @property
    def counted_max(self) -> Decimal:
        """The dearest rate among the token kinds the budget counts (input, cache writes of
        either duration, output), in this tier."""
        return max(self.input, self.output, self.cache_write, self.write_1h)


def _p(inp: str, out: str, read: str, write: str, write_1h: str | None = None, *, source: str) -> Price:
    w1h = Decimal(inp) * 2 if write_1h is None else Decimal(write_1h)
    return Price(Decimal(inp), Decimal(out), Decimal(read), Decimal(write), w1h, source)


CURRENT = "anthropic.com/pricing, 2026-11"
OLDER = "anthropic.com/pricing, 2025; 1-hour cache write 2 × input (Anthropic's rule)"
HAIKU_5_5_TIER = 100_000

# Dated ids (claude-sonnet-4-5-20250929) and `-latest` aliases find their family's row.
# Not priced until verified (an admin may set them meanwhile): claude-fable-5-2, Mythos.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": _p("10", "50", "0.25", "12.50", "20", source=CURRENT),
    "claude-opus-5-5": _p("4", "20", "0.20", "5", "8", source=CURRENT),
    "claude-sonnet-5-5": _p("2", "10", "0.20", "2.50", "4", source=CURRENT),
    "claude-haiku-5-5": Price(
        Decimal("0.10"),
        Decimal("0.50"),
        Decimal("0.01"),
        Decimal("0.125"),
        Decimal("0.20"),
        f"{CURRENT}; prompts up to 100K tokens, the whole request above at the higher tier",
        tier_tokens=HAIKU_5_5_TIER,
        above=_p("0.50", "2.50", "0.05", "0.625", "1.00", source=f"{CURRENT}; prompts over 100K tokens"),
    ),
    "claude-opus-5": _p("5", "25", "0.50", "6.25", "10", source=CURRENT),
    "claude-sonnet-5": _p("2", "10", "0.20", "2.50", "4", source=CURRENT),
    "claude-fable-5": _p("10", "50", "1.00", "12.50", "20", source=CURRENT),
    "claude-opus-4-8": _p("5", "25", "0.50", "6.25", "10", source=CURRENT),
    "claude-opus-4-7": _p("5", "25", "0.50", "6.25", "10", source=CURRENT),
    "claude-opus-4-6": _p("5", "25", "0.50", "6.25", "10", source=CURRENT),
    "claude-sonnet-4-6": _p("3", "15", "0.30", "3.75", "6", source=CURRENT),
    "claude-opus-4-5": _p("5", "25", "0.50", "6.25", "10", source=CURRENT),
    "claude-haiku-4-5": _p("1", "5", "0.10", "1.25", "2", source=CURRENT),
    "claude-opus-4-1": _p("15", "75", "1.50", "18.75", source=OLDER),
    "claude-opus-4": _p("15", "75", "1.50", "18.75", source=OLDER),
    "claude-sonnet-4-5": _p("3", "15", "0.30", "3.75", source=OLDER),
    "claude-sonnet-4": _p("3", "15", "0.30", "3.75", source=OLDER),
    "claude-3-7-sonnet": _p("3", "15", "0.30", "3.75", source=OLDER),
    "claude-3-5-haiku": _p("0.80", "4", "0.08", "1", source=OLDER),
}


def price_key(model: str | None, table: dict[str, Price]) -> str | None:
    """The row of `table` that prices `model`: its own, or its family's for a dated or `-latest`
    id (claude-sonnet-4-5-20250929). A newer generation is not its elder's family:
    claude-opus-4-9 is not priced as claude-opus-4 — it has no price until someone sets one."""
    if not model:
        return None
    if model in table:
        return model
    family = DATED.sub("", model)
    return family if family != model and family in table else None


def price_for(model: str | None, table: dict[str, Price] | None = None) -> Price | None:
    """The price of `model` in `table` (default: PRICES; spend.prices adds admins' prices)."""
    table = PRICES if table is None else table
    key = price_key(model, table)
    return None if key is None else table[key]


def cost(
    model: str | None,
    *,
    input: int = 0,
    output: int = 0,
    cache_read: int = 0,
    cache_write: int = 0,
    cache_write_1h: int = 0,
    table: dict[str, Price] | None = None,
) -> Decimal | None:
    """What one request costs. `cache_write` is every cache-write token; `cache_write_1h` the
    part of them written for an hour (priced at the 1-hour rate, the rest at the 5-minute one)."""
    price = price_for(model, table)
    if price is None:
        return None
    price = price.at(input + cache_write + cache_read)
    write_1h = min(cache_write_1h, cache_write)
    total = (
        input * price.input
        + output * price.output
        + cache_read * price.cache_read
        + (cache_write - write_1h) * price.cache_write
        + write_1h * price.write_1h
    )
    return total / MILLION


def counted_ceiling_cost(model: str | None, tokens: int, table: dict[str, Price] | None = None) -> Decimal | None:
    """The most `tokens` counted tokens can cost on `model`, whatever their mix: at the tier a
    prompt of `tokens` reaches (no call of them can send more)."""
    price = price_for(model, table)
    return None if price is None else tokens * price.for_bound(tokens).counted_max / MILLION


def format_money(amount: Decimal | None) -> str:
    if amount is None:
        return "n/a"
    return f"${amount:,.2f}" if amount >= Decimal("0.01") or amount == 0 else f"${amount:.4f}"
