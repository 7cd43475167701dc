"""Reads for the spend pages (Spend, Quotas, Prices) and the home page's quota bar. The ledger's
rows by day or month are runs' (runs.selectors.spend_rows: runs writes the ledger and sits above
spend); the totals and the chart drawn from them are here.

Every figure is aggregated in the database (values().annotate(Sum)), so a page asks a fixed
number of queries however many runs and ledger entries there are. Days and months are the
team's (settings.TIME_ZONE), the same calendar the quota windows count in.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from agents.models_api import ModelFacts
from budgets.prices import PRICES, Price, format_money, price_key
from budgets.quota import DAY, MONTH, ROLLING, from_micros, window_end
from budgets.units import format_tokens
from spend.models import ModelPrice, Quota, Scope
from spend.prices import FREE_MODELS, price_table
from spend.quotas import current

OTHER = "other"
TOP = 6  # series in the chart: the biggest spenders, then "other"
WINDOW_ORDER = {DAY: 0, MONTH: 1, ROLLING: 2}  # the home page shows the shortest calendar window


# -- spend per day or month ------------------------------------------------------------------------


def zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone())


def buckets(period: str, since: date, until: date) -> list[date]:
    """Every day (or first of month) from `since` to `until`, so empty ones show as gaps."""
    if period == DAY:
        return [since + timedelta(days=i) for i in range((until - since).days + 1)]
    months, first = [], since.replace(day=1)
    while first <= until:
        months.append(first)
        first = (first + timedelta(days=32)).replace(day=1)
    return months


@dataclass
class Total:
    who: str
    tokens: int = 0
    cache_read: int = 0
    cost: Decimal | None = None
    unpriced: int = 0
    offline: int = 0  # tokens of the offline scripted model: free, not unpriced
    calls: int = 0
    series: int = 0  # its colour in the chart (TOP: "other")

    def add(self, row: dict) -> None:
        self.tokens += row["tokens"] or 0
        self.cache_read += row["cache_read"] or 0
        self.unpriced += row["unpriced"] or 0
        self.offline += row.get("offline") or 0
        self.calls += row["calls"]
        if row["cost"] is not None:
            self.cost = (self.cost or Decimal(0)) + row["cost"]

    @property
    def tokens_text(self) -> str:
        return format_tokens(self.tokens)

    @property
    def cost_text(self) -> str:
        return format_money(self.cost)

    @property
    def cache_read_text(self) -> str:
        return format_tokens(self.cache_read)

    @property
    def unpriced_text(self) -> str:
        return format_tokens(self.unpriced) if self.unpriced else ""

    @property
    def offline_text(self) -> str:
        return format_tokens(self.offline) if self.offline else ""


def totals(rows: list[dict]) -> list[Total]:
    """Per recipe or person, biggest first (by tokens, then dollars), with series numbers."""
    by_who: dict[str, Total] = {}
    for row in rows:
        by_who.setdefault(row["who"], Total(row["who"])).add(row)
    ranked = sorted(by_who.values(), key=lambda t: (-t.tokens, -(t.cost or 0), t.who))
    for i, total in enumerate(ranked):
        total.series = min(i, TOP)
    return ranked


@dataclass
class Segment:
    series: int
    who: str
    y: float
    h: float
    title: str


@dataclass
class Bar:
    bucket: date
    x: float
    segments: list[Segment] = field(default_factory=list)
    total_text: str = ""


@dataclass
class Chart:
    bars: list[Bar]
    legend: list[tuple[int, str]]
    width: float
    peak_text: str
    period: str


CHART_W, CHART_H, TOP_PAD = 760, 160, 14


def chart(rows: list[dict], ranked: list[Total], *, period: str, since: date, until: date, measure: str) -> Chart:
    """A stacked bar per day or month, a segment per series (the TOP spenders and "other"),
    in tokens or dollars: coordinates for an SVG drawn by the template, no script."""
    series = {t.who: t.series for t in ranked}
    value = (lambda r: float(r["cost"] or 0)) if measure == "dollars" else (lambda r: float(r["tokens"] or 0))
    stacks: dict[date, dict[int, float]] = {}
    for row in rows:
        stack = stacks.setdefault(row["bucket"], {})
        stack[series[row["who"]]] = stack.get(series[row["who"]], 0.0) + value(row)
    peak = max([sum(s.values()) for s in stacks.values()] + [0.0]) or 1.0
    days = buckets(period, since, until)
    step = CHART_W / max(len(days), 1)
    names = {t.series: (t.who if t.series < TOP else OTHER) for t in ranked}
    bars = []
    for i, day in enumerate(days):
        bar, top = Bar(bucket=day, x=round(i * step + step * 0.15, 1)), float(CHART_H)
        for number, amount in sorted(stacks.get(day, {}).items()):
            h = (CHART_H - TOP_PAD) * amount / peak
            top -= h
            shown = _measure_text(amount, measure)
            bar.segments.append(Segment(number, names[number], round(top, 1), round(h, 1), f"{names[number]}: {shown}"))
        bar.total_text = _measure_text(sum(stacks.get(day, {}).values()), measure)
        bars.append(bar)
    legend = sorted(names.items())
    return Chart(bars, legend, round(step * 0.7, 1), _measure_text(peak if stacks else 0, measure), period)


def _measure_text(amount: float, measure: str) -> str:
    if measure == "dollars":
        return format_money(Decimal(str(round(amount, 6))))
    return format_tokens(int(amount))


# -- quotas ----------------------------------------------------------------------------------------


@dataclass
class Axis:
    """One limited axis of a quota (tokens or dollars) as its bar shows it."""

    unit: str
    limit_text: str
    used_text: str
    reserved_text: str
    left_text: str
    used_pct: float
    reserved_pct: float

    @property
    def full(self) -> bool:
        return self.used_pct + self.reserved_pct >= 99.95


@dataclass
class QuotaBar:
    quota: Quota
    axes: list[Axis]
    resets_at: datetime

    @property
    def full(self) -> bool:
        return any(axis.full for axis in self.axes)


def _pct(part: int, whole: int) -> float:
    return min(100.0, 100.0 * part / whole) if whole else 100.0


def quota_bar(quota: Quota) -> QuotaBar:
    """`quota` for its current window (rolled over first if it had not been)."""
    q = current(quota)
    s, axes = q.standing, []
    if q.tokens is not None:
        axes.append(
            Axis(
                unit="tokens",
                limit_text=format_tokens(q.tokens),
                used_text=format_tokens(s.used_tokens),
                reserved_text=format_tokens(s.reserved_tokens),
                left_text=format_tokens(s.tokens_left),
                used_pct=_pct(s.used_tokens, q.tokens),
                reserved_pct=min(_pct(s.reserved_tokens, q.tokens), 100.0 - _pct(s.used_tokens, q.tokens)),
            )
        )
    if q.micros is not None:
        axes.append(
            Axis(
                unit="dollars",
                limit_text=format_money(from_micros(q.micros)),
                used_text=format_money(from_micros(s.used_micros)),
                reserved_text=format_money(from_micros(s.reserved_micros)),
                left_text=format_money(from_micros(s.micros_left)),
                used_pct=_pct(s.used_micros, q.micros),
                reserved_pct=min(_pct(s.reserved_micros, q.micros), 100.0 - _pct(s.used_micros, q.micros)),
            )
        )
    return QuotaBar(q, axes, window_end(q.window, q.window_start, settings.TIME_ZONE))


def quota_bars() -> list[QuotaBar]:
    return [quota_bar(q) for q in Quota.objects.select_related("user")]


def installation_quota_bar() -> QuotaBar | None:
    """The home page's bar: the installation's day quota, else its month's, else its rolling one."""
    quotas = sorted(Quota.objects.filter(scope=Scope.INSTALLATION), key=lambda q: WINDOW_ORDER.get(q.window, 9))
    return quota_bar(quotas[0]) if quotas else None


def people() -> QuerySet:
    return get_user_model().objects.filter(is_active=True).order_by("username")


# -- prices ----------------------------------------------------------------------------------------


@dataclass
class PriceRow:
    model: str
    price: Price | None
    source: str
    admin: bool = False  # an admin's row (removable)
    overrides: bool = False  # … over a built-in one
    priced_by: str = ""  # the row that prices a dated id, when not its own
    pk: int | None = None  # the admin row's id (its Remove link)

    @property
    def rates(self) -> list[str]:
        """input, output, cache read, 5-minute and 1-hour cache write as the price list writes them:
        3.00, 0.30, 1.2345 (a tiered model: its first tier's)."""
        if self.price is None:
            return []
        p = self.price
        return [usd(rate) for rate in (p.input, p.output, p.cache_read, p.cache_write, p.write_1h)]


def usd(rate: Decimal) -> str:
    short = rate.normalize()
    return f"{rate:.2f}" if short.as_tuple().exponent >= -2 else f"{short:f}"


def price_rows() -> list[PriceRow]:
    """Every built-in row and every admin row, with where its price in force comes from."""
    admin = {row.model: row for row in ModelPrice.objects.all()}
    rows = []
    for model in sorted(set(PRICES) | set(admin)):
        if model in admin:
            row = admin[model]
            rows.append(PriceRow(model, row.price, "set by an admin", admin=True, overrides=model in PRICES, pk=row.pk))
        else:
            rows.append(PriceRow(model, PRICES[model], "the built-in table"))
    return rows


def sdk_models() -> list[str]:
    """The Claude models the pinned anthropic SDK names. Read from its type hints, which are
    not an API: an SDK that changes their shape leaves the list empty, never a broken page."""
    try:
        from anthropic.types.model import Model  # only the Prices page needs the SDK loaded

        names = []
        for arg in typing.get_args(Model):
            names += [a for a in typing.get_args(arg) if isinstance(a, str) and a.startswith("claude")]
        return sorted(set(names))
    except Exception:  # noqa: BLE001 - any change in the SDK's typing must not break the page
        return []


def sdk_price_rows(known: list[PriceRow]) -> list[PriceRow]:
    """The SDK's models that no row above lists by name: priced through their family's row
    (dated ids), or flagged as having no price."""
    table, listed = price_table(), {row.model for row in known}
    rows = []
    for model in sdk_models():
        if model in listed or model in FREE_MODELS:
            continue
        key = price_key(model, table)
        rows.append(
            PriceRow(model, table.get(key) if key else None, "none" if key is None else "", priced_by=key or "")
        )
    return rows


@dataclass
class ModelRow:
    """A model the API key can use (its Models API facts) with its price row."""

    facts: ModelFacts
    price: PriceRow


def api_model_rows(models: tuple[ModelFacts, ...]) -> list[ModelRow]:
    """Each listed model with the price in force for it (a dated id through its family's row)."""
    table = price_table()
    rows = []
    for facts in models:
        key = price_key(facts.id, table)
        priced_by = key if key and key != facts.id else ""
        rows.append(ModelRow(facts, PriceRow(facts.id, table.get(key) if key else None, "", priced_by=priced_by)))
    return rows
