"""The audit page's filters, shared by its CSV export: both list the same rows, and a bad
value is an error shown beside its field, never silently dropped."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

from audit.models import Source

ISO_DATE = "%Y-%m-%d"
SOURCE_CHOICES = [("", "any source"), *Source.choices]


def _text(label: str, max_length: int = 150) -> forms.CharField:
    return forms.CharField(
        required=False,
        label=label,
        max_length=max_length,
        widget=forms.TextInput(attrs={"placeholder": label, "aria-label": label}),
    )


def _date(label: str) -> forms.DateField:
    return forms.DateField(
        required=False,
        label=label,
        input_formats=[ISO_DATE],
        widget=forms.DateInput(attrs={"type": "date"}, format=ISO_DATE),
    )


class AuditFilterForm(forms.Form):
    who = _text("who")
    action = _text("action", 60)
    target_type = _text("target type", 40)
    target_id = _text("target id", 64)
    source = forms.ChoiceField(
        required=False, label="source", choices=SOURCE_CHOICES, widget=forms.Select(attrs={"aria-label": "source"})
    )
    since = _date("from")
    until = _date("to")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        since: date | None = data.get("since")
        until: date | None = data.get("until")
        if since and until and since > until:
            self.add_error("until", f"{until.isoformat()} is before the start, {since.isoformat()}")
        return data

    def error_lines(self) -> list[str]:
        """Every error as "field: message": the CSV export's answer to filters it cannot read."""
        return [
            f"{self[name].label}: {message}" if name in self.fields else message
            for name, messages in self.errors.items()
            for message in messages
        ]
