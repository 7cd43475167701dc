"""What the list pages' filters share (history, audit): a from/to day range that must be in
order, every error as "field: message" for the CSV exports, which answer a filter they cannot
read with a 400 that says why, like the pages, and a queryset narrowed by the filters given."""

from __future__ import annotations

from datetime import date
from typing import Any, TypeVar

from django import forms
from django.db.models import Model, QuerySet

ISO_DATE = "%Y-%m-%d"
M = TypeVar("M", bound=Model)


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


def filter_given(rows: QuerySet[M], **lookups: Any) -> QuerySet[M]:
    """`rows` narrowed by each lookup whose value is given (an empty field or None filters
    nothing): a list page's filters, each optional. One filter() a lookup, in the order given,
    so the WHERE clause reads in that order too."""
    for lookup, value in lookups.items():
        if value:
            rows = rows.filter(**{lookup: value})
    return rows
