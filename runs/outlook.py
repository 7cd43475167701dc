"""Before the start (docs/spend.md): a run's worst case against what each quota that applies has
left, the models that have no price, and what a recipe's `schedule:` does to its quotas.

Reads only (a selector): the run form, `auto <kind> run --dry-run`, `auto <kind> check` and a
change request's cost delta show these lines. The worst case is an upper bound, so a run
whose worst case does not fit *may* pause, not *will*; one that fits cannot pause on a quota
unless other runs spend meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from budgets.plan import Plan, resolve
from budgets.prices import format_money, price_for
from budgets.quota import DAY, MONTH, ROLLING, from_micros, to_micros, window_end, window_start
from budgets.units import format_tokens
from budgets.when import next_tick, parse_when
from budgets.when import zone as when_zone
from catalogue.plan_report import models_for, prices, worst_case_money, wrapup_for
from catalogue.recipe import RecipeError, parse_recipe
from spend.models import Quota
from spend.quotas import current, quotas_for

TICKS_CAP = 5_000  # a cron that fires more often than this in one window is counted as "at least"
PER = {DAY: "a day", MONTH: "a month", ROLLING: "in 24 h"}
NOT_MIGRATED = "unknown: the database is not migrated (python manage.py migrate)"


@dataclass(frozen=True)
class WorstCase:
    """A run's worst case: counted tokens, what they may cost (None: a model has no price) and
    the models that spend it (the judge only when the recipe has a goal to judge)."""

    tokens: int
    money: Decimal | None
    models: tuple[str, ...]

    @classmethod
    def of(cls, plan: Plan, *, executor: str, judge: str, wrapup: str | None = None) -> WorstCase:
        wrapup = wrapup if plan.split.takeover is not None else None
        models = tuple(dict.fromkeys(m for m in (executor, wrapup, judge if plan.judge_tokens else None) if m))
        return cls(plan.worst_tokens, worst_case_money(plan, executor=executor, judge=judge, wrapup=wrapup), models)

    @property
    def unpriced(self) -> list[str]:
        return unpriced_models(self.models)

    def text(self) -> str:
        return f"worst case {format_tokens(self.tokens)} tokens ({format_money(self.money)})"


def unpriced_models(models) -> list[str]:
    """The models (in order, once each) that no price in force covers; the offline one is free."""
    seen, table = [], prices()
    for model in models:
        if model and model not in seen and price_for(model, table) is None:
            seen.append(model)
    return seen


def price_warnings(models) -> list[str]:
    """What `auto check` and the run form say about a recipe's models that have no price."""
    return [
        f"model {model} has no price: money shows as n/a and a dollar quota pauses its runs; "
        "set one with `auto price set` or on the Prices page"
        for model in unpriced_models(models)
    ]


# -- one run against what each quota has left ------------------------------------------------------


def recipe_outlook(*, text: str, path: str, kind: str, user_id: int | None) -> tuple[list[str], list[str]]:
    """(quota lines, price warnings) for a run of the recipe `text`, as written, by `user_id`:
    what the run form shows before anyone presses Run."""
    try:
        spec = parse_recipe(text, path=path, kind=kind)
    except RecipeError:
        return [], []  # not runnable: the form says why when it is sent
    executor, judge = models_for(spec)
    worst = WorstCase.of(
        resolve(spec.do, spec.loop_while), executor=executor, judge=judge, wrapup=wrapup_for(spec, executor)
    )
    return quota_lines(target=spec.target, user_id=user_id, worst=worst), price_warnings(worst.models)


def quota_lines(*, target: str, user_id: int | None, worst: WorstCase, now: datetime | None = None) -> list[str]:
    """One line per quota that applies to a run of `target` started by `user_id`."""
    try:
        quotas = [current(q, now) for q in quotas_for(target=target, user_id=user_id)]
    except DatabaseError:  # `auto check` of a file on a checkout whose database is not set up yet
        return [NOT_MIGRATED]
    return [f"{worst.text()}; {_left_line(q, worst)}" for q in quotas]


def _left_line(quota: Quota, worst: WorstCase) -> str:
    standing = quota.standing
    if quota.micros is not None and worst.money is None:
        return (
            f"{quota.name} is in dollars and {', '.join(worst.unpriced)} has no price "
            "— the run will pause for want of a price"
        )
    left, fits = [], True
    if quota.tokens is not None:
        left.append(f"{format_tokens(standing.tokens_left)} tokens")
        fits &= worst.tokens <= standing.tokens_left
    if quota.micros is not None:
        left.append(format_money(from_micros(standing.micros_left)))
        fits &= to_micros(worst.money) <= standing.micros_left
    if fits:
        verdict = "fits"
    elif (quota.tokens is not None and standing.tokens_left == 0) or (
        quota.micros is not None and standing.micros_left == 0
    ):
        verdict = "the run will pause"
    else:
        verdict = "the run may pause"
    return f"{quota.name} has {' and '.join(left)} left — {verdict}"


# -- a schedule against the quotas' limits -----------------------------------------------------------


def ticks_in(when: str, tz: str, start: datetime, end: datetime) -> tuple[int, bool]:
    """How many times a schedule (`0 7 * * *`, `@every 30m`…) fires in [start, end), and
    whether the count stopped at TICKS_CAP (then it fires at least that often)."""
    parsed, zone = parse_when(when), when_zone(tz, settings.TIME_ZONE)
    if parsed.minutes:  # a fixed interval: no need to step through it
        return -(-int((end - start).total_seconds()) // (parsed.minutes * 60)), False
    count, tick = 0, next_tick(parsed, zone, start - timedelta(microseconds=1))
    while tick < end:
        count += 1
        if count >= TICKS_CAP:
            return count, True
        tick = next_tick(parsed, zone, tick)
    return count, False


def schedule_lines(*, target: str, when: str, worst: WorstCase, tz: str = "", now: datetime | None = None) -> list[str]:
    """A scheduled recipe against each quota of the installation and of the recipe: runs per
    window × worst case, against the quota's limit (not what is left now: this is a rate)."""
    now = now or timezone.now()
    try:
        quotas = quotas_for(target=target, user_id=None)
    except DatabaseError:
        return [NOT_MIGRATED]
    lines = []
    for quota in quotas:
        ticks, capped = ticks_in(when, tz, *_span(quota.window, now))
        lines.append(_schedule_line(quota, ticks, capped, worst))
    return lines


def _span(window: str, now: datetime) -> tuple[datetime, datetime]:
    """The window `now` falls in (a calendar day or month); a rolling one: the next 24 h."""
    if window == ROLLING:
        return now, now + timedelta(hours=24)
    start = window_start(window, now, settings.TIME_ZONE)
    return start, window_end(window, start, settings.TIME_ZONE)


def _times(ticks: int, capped: bool, per: str) -> str:
    return f"scheduled {'at least ' if capped else ''}{ticks:,} time{'s' if ticks != 1 else ''} {per}"


def schedule_outlook(*, text: str | None, kind: str, name: str, now: datetime | None = None) -> list[str]:
    """A change request's recipe (as it will be) with a `schedule:`, against the quotas of the
    installation and of the recipe; nothing when it has no schedule or does not parse."""
    if not text:
        return []
    try:
        spec = parse_recipe(text, path=f"{name}.md", kind=kind, name=name)
    except RecipeError:
        return []  # the plan delta above says what is wrong
    if not spec.schedule or spec.schedule == "off":
        return []
    executor, judge = models_for(spec)
    worst = WorstCase.of(
        resolve(spec.do, spec.loop_while), executor=executor, judge=judge, wrapup=wrapup_for(spec, executor)
    )
    try:
        lines = schedule_lines(target=spec.target, when=spec.schedule, worst=worst, now=now)
        if not lines:  # still worth knowing what it would spend in a day
            ticks, capped = ticks_in(spec.schedule, "", *_span(DAY, now or timezone.now()))
            total = format_tokens(ticks * worst.tokens)
            lines = [
                f"{_times(ticks, capped, PER[DAY])} × worst case {format_tokens(worst.tokens)} = {total} tokens "
                "a day; no quota limits it"
            ]
    except ValueError:  # a schedule the scheduler itself would refuse (the sync logs it)
        return []
    return lines


def _schedule_line(quota: Quota, ticks: int, capped: bool, worst: WorstCase) -> str:
    per = PER[quota.window]
    times = _times(ticks, capped, per)
    if quota.micros is not None and worst.money is None:
        return (
            f"{times}; {quota.name} is in dollars and {', '.join(worst.unpriced)} has no price "
            "— runs will pause for want of a price"
        )
    each, total, over = [], [], False
    if quota.tokens is not None:
        each.append(format_tokens(worst.tokens))
        total.append(f"{format_tokens(ticks * worst.tokens)} tokens")
        over |= ticks * worst.tokens > quota.tokens
    if quota.micros is not None:
        each.append(format_money(worst.money))
        total.append(format_money(ticks * worst.money))
        over |= to_micros(ticks * worst.money) > quota.micros
    return (
        f"{times} × worst case {' and '.join(each)} = {' and '.join(total)} {per}; "
        f"{quota.name} is {quota.limit_text()} — {'runs will pause' if over else 'fits'}"
    )
