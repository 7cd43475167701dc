"""Quotas (docs/spend.md), pure: the window a quota counts over, and what a quota leaves a call.

A quota limits counted tokens and/or dollars over a window: a calendar day or month in the
team's time zone, or a rolling 24 hours counted by the hour (what was spent in the current
hour and the 23 before it). Money is kept in whole micro-dollars so that the database can
add and compare it exactly on SQLite and PostgreSQL alike.

Before a call the engine reserves its bound (input bound + max_tokens) from every quota that
applies, in tokens and, priced at the dearest rate the call could be billed at, in dollars;
a quota whose dollars cannot be priced for the call's model refuses it (never uncounted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, Decimal
from zoneinfo import ZoneInfo

DAY, MONTH, ROLLING = "day", "month", "rolling 24h"
WINDOWS = (DAY, MONTH, ROLLING)
MICROS = Decimal(1_000_000)


def window_start(window: str, now: datetime, zone: str) -> datetime:
    """The start of the window `now` falls in, as an aware datetime (in `zone`)."""
    local = now.astimezone(ZoneInfo(zone))
    if window == DAY:
        return _midnight(local)
    if window == MONTH:
        return _midnight(local.replace(day=1))
    if window == ROLLING:
        return local.replace(minute=0, second=0, microsecond=0) - timedelta(hours=23)
    raise ValueError(f"unknown quota window {window!r}; expected one of {', '.join(WINDOWS)}")


def window_end(window: str, start: datetime, zone: str) -> datetime:
    """When the window that began at `start` gives way to the next (rolling: when its oldest
    hour drops out, an hour after now's)."""
    local = start.astimezone(ZoneInfo(zone))
    if window == DAY:
        return _midnight(local + timedelta(days=1, hours=2))  # +2h: a DST day may be 25 hours long
    if window == MONTH:
        return _midnight((local.replace(day=28) + timedelta(days=4)).replace(day=1))
    if window == ROLLING:
        return start + timedelta(hours=24)
    raise ValueError(f"unknown quota window {window!r}")


def _midnight(local: datetime) -> datetime:
    naive = local.replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    return naive.replace(tzinfo=local.tzinfo)


def to_micros(dollars: Decimal | None) -> int | None:
    """Dollars as whole micro-dollars, rounded up: a cost is never counted short."""
    if dollars is None:
        return None
    return int((dollars * MICROS).to_integral_value(rounding=ROUND_CEILING))


def from_micros(micros: int | None) -> Decimal | None:
    return None if micros is None else Decimal(micros) / MICROS


@dataclass(frozen=True)
class Standing:
    """One quota as it stands: its limits (None: that axis is not limited) and what its
    window holds, settled and reserved for calls in flight."""

    tokens: int | None
    micros: int | None
    used_tokens: int = 0
    used_micros: int = 0
    reserved_tokens: int = 0
    reserved_micros: int = 0

    @property
    def tokens_left(self) -> int | None:
        if self.tokens is None:
            return None
        return max(self.tokens - self.used_tokens - self.reserved_tokens, 0)

    @property
    def micros_left(self) -> int | None:
        if self.micros is None:
            return None
        return max(self.micros - self.used_micros - self.reserved_micros, 0)

    def fits(self, tokens: int, micros: int | None) -> bool:
        """Whether a reservation of `tokens` costing at most `micros` fits (None: no price)."""
        if self.tokens is not None and self.used_tokens + self.reserved_tokens + tokens > self.tokens:
            return False
        if self.micros is not None:
            return micros is not None and self.used_micros + self.reserved_micros + micros <= self.micros
        return True

    def room(self, micros_per_token: Decimal | None) -> int | None:
        """The most counted tokens one call may still reserve here (None: no limit), given the
        dearest price of a token on its model in micro-dollars (None: no price: a dollar quota
        leaves no room at all)."""
        rooms = []
        if self.tokens is not None:
            rooms.append(self.tokens_left)
        if self.micros is not None:
            if micros_per_token is None:
                return 0
            if micros_per_token > 0:  # a free model (the offline one) spends no dollars
                rooms.append(math.floor(Decimal(self.micros_left) / micros_per_token))
        return min(rooms) if rooms else None


def reservation_micros(tokens: int, micros_per_token: Decimal | None) -> int | None:
    """What a call reserving `tokens` counted tokens may cost at most, in micro-dollars."""
    if micros_per_token is None:
        return None
    return math.ceil(tokens * micros_per_token)
