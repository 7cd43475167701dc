"""The price table in force: budgets.prices.PRICES with the admins' ModelPrice rows over it.

Read often (every settled call is priced), changed rarely: each process keeps the merged
table for PRICE_CACHE_SECONDS, and a change made in this process clears it at once. Another
process sees a change within PRICE_CACHE_SECONDS.
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal

from budgets.prices import PRICES, Price, price_for, price_key
from spend.models import ModelPrice

PRICE_CACHE_SECONDS = 10
FREE_MODELS = ("scripted-demo",)  # the offline scripted model (runs.services.SCRIPTED_MODEL) costs nothing

_cache: tuple[float, dict[str, Price]] | None = None
_lock = threading.Lock()


def price_table() -> dict[str, Price]:
    global _cache
    with _lock:
        if _cache is None or time.monotonic() - _cache[0] > PRICE_CACHE_SECONDS:
            table = dict(PRICES)
            table.update({row.model: row.price for row in ModelPrice.objects.all()})
            _cache = (time.monotonic(), table)
        return _cache[1]


def forget_prices() -> None:
    """A price changed here: the next read builds the table anew."""
    global _cache
    with _lock:
        _cache = None


def price_of(model: str | None) -> Price | None:
    return price_for(model, price_table())


def price_source(model: str | None) -> str:
    """Where a model's price comes from: `set by an admin`, `the built-in table`, or `none`."""
    if model in FREE_MODELS:
        return "free (offline)"
    key = price_key(model, price_table())
    if key is None:
        return "none"
    return "set by an admin" if ModelPrice.objects.filter(model=key).exists() else "the built-in table"


def micros_per_token(model: str | None, tokens: int | None = None) -> Decimal | None:
    """The dearest a counted token (or a cache read riding with it) can cost on `model`, in
    micro-dollars (numerically its USD-per-million rate); None when the model has no price.
    `tokens`: the call's bound, so a tiered model is priced at the tier that bound can reach
    (None: its dearest tier)."""
    if model in FREE_MODELS:
        return Decimal(0)
    price = price_of(model)
    if price is None:
        return None
    tier = price.for_bound(tokens)
    return max(tier.counted_max, tier.cache_read)
