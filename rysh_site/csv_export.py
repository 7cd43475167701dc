"""Streaming CSV for the pages that export one (history, audit, spend): a writer whose rows are
yielded as text, and cells a spreadsheet shows as text rather than runs as a formula."""

from __future__ import annotations

import csv

FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


class _Echo:
    """A file that hands back what is written, so each row can be yielded to the response."""

    def write(self, value: str) -> str:
        return value


def csv_writer():
    """writer.writerow(cells) returns the row's text instead of writing it anywhere."""
    return csv.writer(_Echo())


def csv_cell(value) -> str:
    """A cell a spreadsheet shows as text: one starting like a formula gets a leading quote."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_LEADS) else text
