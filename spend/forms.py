"""The spend pages' forms: the Spend page's filters (shared by its CSV export), a quota, a
price. What a page sends is checked here or by spend.services, and a bad value is an error
shown beside its field, never silently dropped."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.utils import timezone

from budgets.quota import DAY, MONTH
from budgets.units import UnitError, parse_tokens
from rysh_site.filters import DayRangeFilterForm
from spend.models import Scope, Window

DEFAULT_DAYS = 30
DEFAULT_MONTHS = 12
MAX_DAYS = 400  # a chart of more days than this is unreadable: ask for months
MEASURES = [("tokens", "tokens"), ("dollars", "dollars")]


def _select(label: str, choices: list[tuple[str, str]]) -> forms.ChoiceField:
    return forms.ChoiceField(
        required=False, label=label, choices=choices, widget=forms.Select(attrs={"aria-label": label})
    )


class SpendFilterForm(DayRangeFilterForm):
    """Spend by recipe or person, per day (the last 30 days unless a range is given) or per
    month (the last 12 months), drawn in tokens or dollars."""

    by = _select("by", [("recipe", "by recipe"), ("person", "by person")])
    period = _select("period", [(DAY, "per day"), (MONTH, "per month")])
    measure = _select("chart", [(m, f"chart {label}") for m, label in MEASURES])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        data["by"] = data.get("by") or "recipe"
        data["period"] = data.get("period") or DAY
        data["measure"] = data.get("measure") or "tokens"
        if self.errors:
            return data
        today = timezone.localdate()
        until: date = data.get("until") or today
        if data.get("since"):
            since = data["since"]
        elif data["period"] == MONTH:
            since = _months_back(until.replace(day=1), DEFAULT_MONTHS - 1)
        else:
            since = until - timedelta(days=DEFAULT_DAYS - 1)
        if since > until:  # only `since` was given, and it is in the future
            self.add_error("since", f"{since.isoformat()} is after {until.isoformat()}")
        elif data["period"] == DAY and (until - since).days >= MAX_DAYS:
            self.add_error("since", f"at most {MAX_DAYS} days per day; choose per month for a longer range")
        data["since"], data["until"] = since, until
        return data

    def filters(self) -> dict[str, Any]:
        return {k: self.cleaned_data[k] for k in ("by", "period", "since", "until")}


def _months_back(first: date, months: int) -> date:
    for _ in range(months):
        first = (first - timedelta(days=1)).replace(day=1)
    return first


class QuotaForm(forms.Form):
    """Add or change a quota: its scope (and which recipe or person), its window, and a limit
    in tokens (budget sizes: 20p, 4b, 1s), in dollars, or both."""

    scope = forms.ChoiceField(choices=Scope.choices, label="scope")
    recipe = forms.ChoiceField(required=False, label="recipe", help_text="for a recipe quota")
    user = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="person",
        empty_label="—",
        help_text="for a person's quota (their runs and schedules)",
    )
    window = forms.ChoiceField(choices=Window.choices, label="window")
    tokens = forms.CharField(
        required=False, label="tokens", help_text="a budget size: 500p, 4b, 1s (1b = 200,000 tokens)"
    )
    dollars = forms.DecimalField(
        required=False, label="dollars", min_value=Decimal("0.01"), max_digits=12, decimal_places=2
    )

    def __init__(self, *args: Any, recipes: list[str], people, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["recipe"].choices = [("", "—"), *((t, t) for t in recipes)]
        self.fields["user"].queryset = people

    def clean_tokens(self) -> int | None:
        text = self.cleaned_data["tokens"].strip()
        if not text:
            return None
        try:
            return parse_tokens(text)
        except UnitError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors and data.get("tokens") is None and data.get("dollars") is None:
            self.add_error("tokens", "give tokens, dollars or both")
        if data.get("scope") == Scope.RECIPE and not data.get("recipe") and "recipe" not in self.errors:
            self.add_error("recipe", "choose the recipe this quota limits")
        if data.get("scope") == Scope.USER and not data.get("user") and "user" not in self.errors:
            self.add_error("user", "choose the person this quota limits")
        return data


def _rate(label: str) -> forms.DecimalField:
    return forms.DecimalField(
        label=label, min_value=Decimal(0), max_digits=10, decimal_places=4, help_text="USD per million tokens"
    )


class PriceForm(forms.Form):
    """A model's four prices, USD per million tokens, as Anthropic's price list gives them."""

    model = forms.CharField(max_length=100, label="model", help_text="a model id, e.g. claude-sonnet-5")
    input = _rate("input")
    output = _rate("output")
    cache_read = _rate("cache read")
    cache_write = _rate("cache write")
    cache_write_1h = forms.DecimalField(
        label="1-hour cache write",
        required=False,
        min_value=Decimal(0),
        max_digits=10,
        decimal_places=4,
        help_text="USD per million tokens; blank: 2 × input (Anthropic's rule)",
    )
