"""The audit page's filters, shared by its CSV export: both list the same rows, and a bad
value is an error shown beside its field, never silently dropped."""

from __future__ import annotations

from django import forms

from audit.models import Source
from rysh_site.filters import DayRangeFilterForm

SOURCE_CHOICES = [("", "any source"), *Source.choices]


def _text(label: str, max_length: int = 150) -> forms.CharField:
    return forms.CharField(
        required=False,
        label=label,
        max_length=max_length,
        widget=forms.TextInput(attrs={"placeholder": label, "aria-label": label}),
    )


class AuditFilterForm(DayRangeFilterForm):
    who = _text("who")
    action = _text("action", 60)
    target_type = _text("target type", 40)
    target_id = _text("target id", 64)
    source = forms.ChoiceField(
        required=False, label="source", choices=SOURCE_CHOICES, widget=forms.Select(attrs={"aria-label": "source"})
    )
