"""Reads for the spend pages (Spend, Quotas, Prices) and the home page's quota bar.

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
from django.db.models import Case, CharField, Count, F, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Concat, Trunc

from agents.models_api import ModelFacts
from budgets.prices import PRICES, Price, format_money, price_key
from budgets.quota import DAY, MONTH, ROLLING, from_micros, window_end
from budgets.units import format_tokens
from catalogue.models import Recipe
from runs.models import LedgerEntry, Run, RunEvent, RunState
from spend.models import ModelPrice, Quota, Scope
from spend.prices import FREE_MODELS, price_table
from spend.quotas import current
from spend.services import QUOTA_PAUSE

NOBODY = "(nobody)"  # runs no person started (the CLI without a user)
REJUDGE = "(re-judge)"  # a re-judge's calls (no run) whose re-judge was deleted
# who spent: a run's recipe or the person each call was charged to (who started the run, or who
# continued or granted it since); a re-judge's calls (run=None) show as "re-judge of kind/name"
# and count for the person who asked for it
BY = {
    "recipe": Case(
        When(run__isnull=False, then=F("run__target")),
        When(rejudge__isnull=False, then=Concat(Value("re-judge of "), F("rejudge__target"))),
        default=Value(REJUDGE),
        output_field=CharField(),
    ),
    "person": F("charged_to__username"),  # whose quota counted the call (Run.charged_to then)
}
OTHER = "other"
TOP = 6  # series in the chart: the biggest spenders, then "other"
WINDOW_ORDER = {DAY: 0, MONTH: 1, ROLLING: 2}  # the home page shows the shortest calendar window


# -- spend per day or month ------------------------------------------------------------------------


def zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone())


def spend_rows(*, by: str, period: str, since: date, until: date) -> list[dict]:
    """Counted tokens, dollars and calls per (day or month, recipe or person) from `since` to
    `until` (whole local days), oldest first. `cost` sums the priced calls only (None when
    none was priced); `unpriced` counts the tokens of calls whose model had no price, `offline`
    those of the offline scripted model (free: never unpriced)."""
    entries = LedgerEntry.objects.filter(created_at__gte=start_of(since), created_at__lt=start_of(until + timedelta(1)))
    rows = (
        entries.annotate(bucket=Trunc("created_at", period, tzinfo=zone()), who=BY[by])
        .values("bucket", "who")
        .annotate(
            # before `cost`, which would shadow the field of the same name
            unpriced=Sum("counted_tokens", filter=Q(cost__isnull=True) & ~Q(model__in=FREE_MODELS), default=0),
            offline=Sum("counted_tokens", filter=Q(model__in=FREE_MODELS), default=0),
            tokens=Sum("counted_tokens"),
            cache_read=Sum("cache_read_tokens"),
            cost=Sum("cost"),
            calls=Count("id"),
        )
        .order_by("bucket", "who")
    )
    return [{**row, "bucket": row["bucket"].astimezone(zone()).date(), "who": row["who"] or NOBODY} for row in rows]


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


@dataclass
class Waiting:
    run: Run
    why: str


def runs_paused_on_quota() -> list[Waiting]:
    """Runs waiting for a quota to have room, oldest first, with their last `paused` event's
    message (what the call needs and what the quota has left): two queries in all."""
    runs = list(
        Run.objects.filter(state=RunState.PAUSED, pause_reason__startswith=QUOTA_PAUSE)
        .select_related("user", "charged_to")
        .order_by("pk")
    )
    said: dict[int, str] = {}
    events = RunEvent.objects.filter(run__in=runs, kind="paused").order_by("run_id", "-id")
    for run_id, message in events.values_list("run_id", "message"):
        said.setdefault(run_id, message)
    return [Waiting(run, _why(run, said.get(run.pk, ""))) for run in runs]


def _why(run: Run, message: str) -> str:
    """The event's message without its `paused(quota: …): ` head, which the state already says."""
    head = f"paused({run.pause_reason}): "
    return message[len(head) :] if message.startswith(head) else message


def recipe_targets() -> list[str]:
    return [r.target for r in Recipe.objects.filter(archived=False).order_by("kind", "name")]


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
