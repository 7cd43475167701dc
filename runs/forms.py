"""The run form and the history filters: what a page sends is checked here, and a bad value
is an error shown beside its field, never silently dropped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from budgets.plan import Grant as PlanGrant
from budgets.units import parse_duration, parse_tokens
from catalogue.spec import Kind
from rysh_site.filters import DayRangeFilterForm

KIND_CHOICES = [("", "all kinds"), *((kind.value, kind.value) for kind in Kind)]


class RunForm(forms.Form):
    """Start (or preview) a run: a text field per argument the recipe asks for, in its order
    (`arg_0`, `arg_1`…), for a web recipe headless (only a browser has a head), and for a coding
    recipe the commit its copy starts from."""

    headless = forms.BooleanField(required=False, initial=True)
    # a branch, tag or commit (`--base`); empty: the recipe's `base:`, else the recipes branch
    base = forms.CharField(required=False, max_length=300, label="base")

    def __init__(self, *args: Any, arg_names: Sequence[str], web: bool, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.arg_keys = [f"arg_{i}" for i in range(len(arg_names))]
        for key, name in zip(self.arg_keys, arg_names):
            # strip=False: an argument reaches the prompt exactly as typed
            self.fields[key] = forms.CharField(label=name, strip=False)
        if not web:
            del self.fields["headless"]
        self.order_fields([*self.arg_keys, "headless", "base"])

    def wants_headless(self) -> bool:
        """As ticked on a web recipe's form; a run without a browser is headless."""
        return self.cleaned_data.get("headless", True) if "headless" in self.fields else True

    @property
    def arg_fields(self) -> list[forms.BoundField]:
        return [self[key] for key in self.arg_keys]

    def base_ref(self) -> str | None:
        self.is_valid()
        return (self.cleaned_data.get("base") or "").strip() or None

    def recipe_args(self) -> list[str]:
        """The arguments in order. Also for a preview, which shows the plan before every field
        is filled: an argument not (validly) given yet is ""."""
        self.is_valid()  # fills cleaned_data; the run itself checks is_valid() before it starts
        return [self.cleaned_data.get(key, "") for key in self.arg_keys]


def _text_filter(label: str) -> forms.CharField:
    return forms.CharField(
        required=False, label=label, widget=forms.TextInput(attrs={"placeholder": label, "aria-label": label})
    )


class HistoryFilterForm(DayRangeFilterForm):
    """The history page's filters, shared by its CSV export: both list the same runs."""

    recipe = _text_filter("recipe")
    kind = forms.ChoiceField(
        required=False, label="kind", choices=KIND_CHOICES, widget=forms.Select(attrs={"aria-label": "kind"})
    )
    cause = _text_filter("cause")


class GrantForm(forms.Form):
    """Raise the cap and continue: extra passes, an extra outer total (`4b`), extra outer time
    (`1h`). Each is optional; the service says which the run needs and how much is allowed."""

    passes = forms.IntegerField(required=False, min_value=0, max_value=10_000)
    total = forms.CharField(required=False, max_length=40, help_text="e.g. 200p, 4b")
    time = forms.CharField(required=False, max_length=40, help_text="e.g. 30m, 1h30m")

    def clean_total(self) -> int:
        return self._parsed("total", parse_tokens)

    def clean_time(self) -> int:
        return self._parsed("time", parse_duration)

    def _parsed(self, name: str, parse) -> int:
        raw = (self.cleaned_data.get(name) or "").strip()
        if not raw:
            return 0
        try:
            return parse(raw)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def grant(self) -> PlanGrant:
        data = self.cleaned_data
        return PlanGrant(passes=data.get("passes") or 0, tokens=data.get("total") or 0, seconds=data.get("time") or 0)

    def error_lines(self) -> list[str]:
        return [f"{name}: {' '.join(errors)}" for name, errors in self.errors.items()]
