"""What the front doors (`auto task fork|compare`, the REST API, the MCP server) show of a fork's
plan and of two runs compared (docs/forks.md): plain data that JSON can carry, and lines of text.

A comparison is whatever dataclass `runs.compare.runs_compare` answers: it is walked, not
spelled out here, so a figure added there shows at every door without a change here."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from django.db import models

from runs.forks import ForkPlan
from runs.models import Run

INDENT = "  "


def run_ref(run: Run) -> dict:
    """A run as the plan and the comparison name it."""
    return {"id": run.pk, "target": run.target, "state": run.state, "cause": run.cause}


def same_recipe_problem(a: Run, b: Run) -> str | None:
    """Two runs compare only when they are of one recipe (a fork is of its parent's)."""
    if (a.kind, a.name) == (b.kind, b.name):
        return None
    return f"run #{a.pk} is of {a.target} and run #{b.pk} of {b.target}: compare two runs of one recipe"


def plan_data(plan: ForkPlan) -> dict:
    return {
        "parent": run_ref(plan.parent),
        "from_pass": plan.from_pass,
        "redo": plan.redo,
        "worst_tokens": plan.worst_tokens,
        "parent_spent_tokens": plan.parent_spent_tokens,
        "notes": list(plan.notes),
        "lines": list(plan.lines),
        "recipe_text": plan.recipe_text,
    }


def plan_where(plan: ForkPlan) -> str:
    """Where the fork starts, in words: "the end of pass 3", or for a redo "pass 3 again"."""
    parent = f"run #{plan.parent.pk} ({plan.parent.target})"
    start = f"the end of pass {plan.from_pass}" if plan.from_pass else "the start (nothing of the parent is kept)"
    if plan.redo:
        return f"redo pass {plan.from_pass + 1} of {parent}: starts from {start}"
    return f"fork of {parent} from {start}; it goes on with pass {plan.from_pass + 1}"


def plan_lines(plan: ForkPlan) -> list[str]:
    """What `auto task fork` prints before it starts anything (and the API's dry run says)."""
    lines = [
        plan_where(plan),
        f"worst case of the fork: {plan.worst_tokens:,} tokens",
        f"the parent spent up to there: {plan.parent_spent_tokens:,} tokens (not paid again)",
    ]
    lines += [f"note: {note}" for note in plan.notes]
    return lines + list(plan.lines)


def as_data(value):
    """`value` as JSON can carry it: dataclasses as dicts, a run as its reference, money as a
    string (as the API writes costs), times in ISO form, paths as strings."""
    if isinstance(value, Run):
        return run_ref(value)
    if isinstance(value, models.Model):
        return value.pk
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): as_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [as_data(v) for v in value]
    if isinstance(value, Decimal | Path):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def compare_lines(comparison) -> list[str]:
    """A comparison as text: its own `lines` when it has them; else each part under its name,
    a list of rows as a table (one column per key), text as an indented block."""
    own = getattr(comparison, "lines", None)
    own = own() if callable(own) else own
    if own:
        return [str(line) for line in own]
    return data_lines(as_data(comparison))


def data_lines(data, depth: int = 0) -> list[str]:
    pad = INDENT * depth
    if not isinstance(data, dict):
        return [f"{pad}{line}" for line in _text(data).splitlines() or [""]]
    lines = []
    for key, value in data.items():
        label = key.replace("_", " ")
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            lines.append(f"{pad}{label}:")
            lines += [f"{pad}{INDENT}{row}" for row in table(value)]
        elif isinstance(value, dict) and not _is_run(value):
            lines.append(f"{pad}{label}:")
            lines += data_lines(value, depth + 1)
        elif isinstance(value, str) and "\n" in value:
            lines.append(f"{pad}{label}:")
            lines += [f"{pad}{INDENT}{line}" for line in value.splitlines()]
        else:
            lines.append(f"{pad}{label}: {_text(value)}")
    return lines


def table(rows: list[dict]) -> list[str]:
    """Rows of dicts as aligned columns under a header of their keys (in first-seen order)."""
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    cells = [[k.replace("_", " ") for k in keys]] + [[_text(row.get(k, "")) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(keys))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]


def _text(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict) and _is_run(value):
        return f"run #{value['id']} ({value['target']})"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) or "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("\n", " ")


def _is_run(value: dict) -> bool:
    return {"id", "target", "state"} <= set(value)
