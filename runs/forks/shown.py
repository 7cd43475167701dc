"""What the front doors (`auto task fork|compare`, the REST API, the MCP server) show of a fork's
plan and of two runs compared (docs/forks.md): plain data that JSON can carry, and lines of text.

A comparison is whatever dataclass `runs.forks.compare.runs_compare` answers: it is walked, not
spelled out here, so a figure added there shows at every door without a change here."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from django.db import models

from runs.forks import ForkPlan
from runs.forks.compare import Comparison
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
    money = getattr(plan, "worst_money", None)
    return {
        "parent": run_ref(plan.parent),
        "from_pass": plan.from_pass,
        "redo": plan.redo,
        "passes_left": getattr(plan, "passes_left", 0),
        "worst_tokens": plan.worst_tokens,
        "worst_money": str(money) if money is not None else None,
        "parent_spent_tokens": plan.parent_spent_tokens,
        "executor": getattr(plan, "executor", ""),
        "judge": getattr(plan, "judge", ""),
        "notes": list(plan.notes),
        "lines": plan_lines(plan),
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
    """What `auto task fork` prints before it starts anything (and the API's dry run says): the
    plan's own lines (where it starts, the fork's worst case, what the parent spent up to there),
    else those three said here; then its notes."""
    lines = list(plan.lines) or [
        plan_where(plan),
        f"worst case of the fork: {plan.worst_tokens:,} tokens",
        f"the parent spent up to there: {plan.parent_spent_tokens:,} tokens (not paid again)",
    ]
    return lines + [f"note: {note}" for note in plan.notes]


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
    """A comparison as text: the runs, the per-pass table, the results file by file, each run's
    diff stat, the prompt edits and the other edits. What has no place there (a figure added
    since) is walked: each part under its name, rows as a table, text as an indented block."""
    if not isinstance(comparison, Comparison):
        return data_lines(as_data(comparison))
    a, b = comparison.a, comparison.b
    lines = [f"A: run #{a.pk} {a.target}  {_state(a)}", f"B: run #{b.pk} {b.target}  {_state(b)}", ""]
    lines += ["passes:"] + [INDENT + row for row in table([pass_row(row) for row in comparison.passes] or [{}])]
    lines += ["", "results:"]
    lines += [f"{INDENT}{f.status:<10} {f.name}" + (f"  ({f.note})" if f.note else "") for f in comparison.files]
    if not comparison.files:
        lines.append(f"{INDENT}(neither run kept a result)")
    for label, diff in (("A", comparison.diff_a), ("B", comparison.diff_b)):
        lines.append(f"diff of {label}: {diff_stat(diff.stat)}" + (f" ({diff.missing})" if diff.missing else ""))
    lines += ["", "prompt edits (A → B):"]
    lines += [f"{INDENT}{_diff_line(d)}" for d in comparison.prompt_diff] or [f"{INDENT}(the same prompt)"]
    lines += [f"{what}: A {va!r}, B {vb!r}" for what, va, vb in comparison.settings]
    return lines


def pass_row(row) -> dict:
    """One line of the per-pass table: a run's own pass, or "(kept)" for one it started after."""
    out = {"pass": row.position}
    for label, figures, inherited in (("A", row.a, row.a_inherited), ("B", row.b, row.b_inherited)):
        if figures is None:
            out |= {label: "(kept)" if inherited else "—", f"{label} tokens": "", f"{label} $": "", f"{label} s": ""}
            out[f"{label} diff"] = ""
            continue
        out |= {
            label: f"#{figures.number} {figures.verdict or '—'}",
            f"{label} tokens": f"{figures.tokens:,}",
            f"{label} $": f"{figures.cost:.4f}" if figures.cost is not None else "—",
            f"{label} s": f"{figures.seconds:.0f}" if figures.seconds is not None else "—",
            f"{label} diff": f"+{figures.added} -{figures.removed}",
        }
    return out


def diff_stat(stat: list[dict]) -> str:
    if not stat:
        return "no changes"
    added = sum(row.get("added") or 0 for row in stat)
    removed = sum(row.get("removed") or 0 for row in stat)
    return f"{len(stat)} file(s), +{added} -{removed}"


def _diff_line(line) -> str:
    return {"add": "+", "del": "-", "hunk": ""}.get(line.kind, " ") + line.text


def _state(run: Run) -> str:
    cause = f" ({run.cause})" if run.cause and run.cause not in run.state_label else ""
    return f"{run.state_label}{cause}" + (f", {lineage_said(run)}" if run.forked_from_id else "")


def lineage_said(run: Run) -> str:
    """ "forked from run #12 at pass 3", or for a redo "forked from run #12 to redo pass 3"."""
    if run.fork_redo:
        return f"forked from run #{run.forked_from_id} to redo pass {(run.fork_pass or 0) + 1}"
    return f"forked from run #{run.forked_from_id} at pass {run.fork_pass}"


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
