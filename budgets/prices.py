"""Per-model prices, USD per million tokens. One table: update it here when prices change.

Money is computed beside tokens, never instead of them: an unknown model shows
tokens only (cost() returns None).
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

    @property
    def counted_max(self) -> Decimal:
        """The dearest rate among the token kinds the budget counts (input, cache write, output)."""
        return max(self.input, self.output, self.cache_write)


def _p(inp: str, out: str, read: str, write: str) -> Price:
    return Price(Decimal(inp), Decimal(out), Decimal(read), Decimal(write))


# Dated ids (claude-sonnet-4-5-20250929) and `-latest` aliases find their family's row.
PRICES: dict[str, Price] = {
    "claude-opus-4-6": _p("5", "25", "0.50", "6.25"),
    "claude-sonnet-4-6": _p("3", "15", "0.30", "3.75"),
    "claude-opus-4-5": _p("5", "25", "0.50", "6.25"),
    "claude-opus-4-1": _p("15", "75", "1.50", "18.75"),
    "claude-opus-4": _p("15", "75", "1.50", "18.75"),
    "claude-sonnet-4-5": _p("3", "15", "0.30", "3.75"),
    "claude-sonnet-4": _p("3", "15", "0.30", "3.75"),
    "claude-3-7-sonnet": _p("3", "15", "0.30", "3.75"),
    "claude-haiku-4-5": _p("1", "5", "0.10", "1.25"),
    "claude-3-5-haiku": _p("0.80", "4", "0.08", "1"),
}


def price_key(model: str | None, table: dict[str, Price]) -> str | None:
    """The row of `table` that prices `model`: its own, or its family's for a dated or `-latest`
    id (claude-sonnet-4-5-20250929). A newer generation is not its elder's family:
    claude-opus-4-7 is not priced as claude-opus-4 — it has no price until someone sets one."""
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
    table: dict[str, Price] | None = None,
) -> Decimal | None:
    price = price_for(model, table)
    if price is None:
        return None
    total = (
        input * price.input + output * price.output + cache_read * price.cache_read + cache_write * price.cache_write
    )
    return total / MILLION


def counted_ceiling_cost(model: str | None, tokens: int, table: dict[str, Price] | None = None) -> Decimal | None:
    """The most `tokens` counted tokens can cost on `model`, whatever their mix."""
    price = price_for(model, table)
    return None if price is None else tokens * price.counted_max / MILLION


def format_money(amount: Decimal | None) -> str:
    if amount is None:
        return "n/a"
    return f"${amount:,.2f}" if amount >= Decimal("0.01") or amount == 0 else f"${amount:.4f}"
