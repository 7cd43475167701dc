"""What the list pages' filter forms share (history, audit): a from/to day range that must be in
order, and every error as "field: message" for the CSV exports, which answer a filter they
cannot read with a 400 that says why, like the pages."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

ISO_DATE = "%Y-%m-%d"


def date_field(label: str) -> forms.DateField:
    return forms.DateField(
        required=False,
        label=label,
        input_formats=[ISO_DATE],
        widget=forms.DateInput(attrs={"type": "date"}, format=ISO_DATE),
    )


class DayRangeFilterForm(forms.Form):
    """A filter form with `since` and `until` (whole days); subclasses add their own fields."""

    since = date_field("from")
    until = date_field("to")

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
