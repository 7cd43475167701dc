"""When a schedule fires (docs/schedules.md), in pure Python: 5 cron fields, `@hourly`, `@daily`,
`@weekly`, `@monthly` (cron, read in the schedule's timezone) or `@every 30m` (a fixed interval,
whole minutes). schedules/ turns a When into django-q2's schedule fields; the run outlook (runs.outlook) counts
a schedule's ticks in a quota's window with it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from budgets.units import UnitError, parse_duration

MACROS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *"}
MAX_MINUTES = 32767  # django-q2 keeps the interval in a small integer


class WhenError(ValueError):
    """Not a schedule, with what is expected."""


@dataclass(frozen=True)
class When:
    cron: str | None = None  # 5 cron fields
    minutes: int | None = None  # or a fixed interval


def parse_when(when: str) -> When:
    text = " ".join(str(when).split())
    lowered = text.lower()
    if lowered in MACROS:
        return When(cron=MACROS[lowered])
    if lowered.startswith("@every"):
        try:
            seconds = parse_duration(text[len("@every") :].strip())
        except UnitError as exc:
            raise WhenError(f"@every needs a duration: {exc}") from None
        minutes = max(1, math.ceil(seconds / 60))
        if minutes > MAX_MINUTES:
            raise WhenError(f"@every can be at most {MAX_MINUTES}m (about 22 days); use a cron for longer")
        return When(minutes=minutes)
    if len(text.split(" ")) == 5 and croniter.is_valid(text):
        return When(cron=text)
    raise WhenError(
        f'{when!r} is not a schedule: expected 5 cron fields such as "0 7 * * *", '
        '@hourly, @daily, @weekly, @monthly or "@every 30m"'
    )


def zone(name: str, default: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or default)
    except (ZoneInfoNotFoundError, ValueError):
        raise WhenError(f"unknown timezone {name!r} (an IANA name such as Europe/Berlin)") from None


def next_tick(when: When, tz: ZoneInfo, after: datetime) -> datetime:
    """The next tick strictly after `after`: never one in the past, so nothing backfills."""
    if when.minutes:
        return after + timedelta(minutes=when.minutes)
    return croniter(when.cron, after.astimezone(tz)).get_next(datetime)
