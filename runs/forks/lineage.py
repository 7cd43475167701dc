"""Reads for the fork pages (docs/forks.md, "Lineage"): what a run was forked from and with which
edits, its forks, its family as a tree, and the values a fork's form starts from."""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from catalogue.recipe.reader import RecipeError, split_frontmatter
from reviews.services import DiffLine, text_diff
from runs import forks
from runs.forks.compare import edits_in_force, lineage, run_prompt
from runs.models import Run

FAMILY_LIMIT = 500  # runs drawn in one family tree: a page, not a dump


def parent_values(run: Run) -> dict[str, str]:
    """What the run ran with, as a fork's form starts from it: its prompt, `iterate_with`,
    `until`, the loop's budget (a size as written), model and effort (its own edits win)."""
    try:
        front = split_frontmatter(run.recipe_text, run.recipe_path)
        keys = yaml.safe_load(front.yaml or "") or {}
    except (RecipeError, yaml.YAMLError):
        keys = {}
    keys = keys if isinstance(keys, dict) else {}
    loop_while = _mapping(_mapping(keys.get("loop")).get("while"))
    prompts = _mapping(loop_while.get("prompts"))
    budget = loop_while.get("budget")
    budget = _mapping(budget).get("size") if isinstance(budget, dict) else budget
    values = {
        "prompt": run_prompt(run),
        "iterate_with": _text(prompts.get("iterate_with")),
        "until": _text(prompts.get("until")),
        "budget": _text(budget),
        "model": run.executor_model,
        "effort": _text(keys.get("effort")),
    }
    values.update({k: v for k, v in edits_in_force(run).items() if k in values})
    return values


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value) -> str:
    return "" if value is None else str(value)


def edits_from(values: dict[str, str], parent: Run) -> forks.ForkEdits:
    """The form's values as ForkEdits: only what differs from what the parent ran with. A browser
    sends a textarea's lines ending in CRLF and may drop or add a final newline: not an edit."""
    before = parent_values(parent)
    changed = {}
    for key, value in values.items():
        if key not in before:
            continue
        value = value.replace("\r\n", "\n").replace("\r", "\n")
        if value.strip() != before[key].strip():
            changed[key] = value
    return forks.ForkEdits(**changed)


@dataclass
class Family:
    run: Run
    children: list[Family] = field(default_factory=list)


def run_family(run: Run) -> Family:
    """The run's lineage root and every fork under it, forks of forks nested, oldest first."""
    root = lineage(run)[-1]
    members = {root.pk: Family(root)}
    frontier = [root.pk]
    while frontier and len(members) < FAMILY_LIMIT:
        found = list(Run.objects.filter(forked_from_id__in=frontier).order_by("pk")[:FAMILY_LIMIT])
        frontier = []
        for child in found:
            if child.pk in members:
                continue
            members[child.pk] = Family(child)
            members[child.forked_from_id].children.append(members[child.pk])
            frontier.append(child.pk)
    return members[root.pk]


def fork_points_said(run: Run) -> dict[int, str]:
    """forks.fork_points in pass order (0: the start)."""
    return dict(sorted(forks.fork_points(run).items()))


def prompt_edit(run: Run) -> list[DiffLine]:
    """A fork's own prompt edit as a diff against its parent's prompt; [] when not edited."""
    parent = run.forked_from if run.forked_from_id else None
    if parent is None or "prompt" not in (run.fork_edits or {}):
        return []
    return text_diff(run_prompt(parent), run_prompt(run))


def passes_marked(passes: list, points: dict[int, str]) -> None:
    """Each pass row told why it cannot be forked from (`fork_why`) or redone (`redo_why`, its
    start being the end of the pass before): "" when it can. Only the page's rows are marked; a
    pushed row offers both on any ended pass and the form says why not."""
    for p in passes:
        p.fork_why = points.get(p.number, "not a pass this run can be forked from")
        p.redo_why = points.get(p.number - 1, "not a pass this run can be redone from")


def lineage_context(run: Run, can: frozenset[str]) -> dict:
    """The run page's lineage: forked from which run at which pass with which edits, its forks,
    which passes can be forked (and why not), and whether this person may fork or propose."""
    edits = run.fork_edits or {}
    return {
        "forked_from": run.forked_from if run.forked_from_id else None,
        "fork_settings": [(k, v) for k, v in edits.items() if k != "prompt"],
        "fork_prompt_diff": prompt_edit(run),
        "forks": list(run.forks.order_by("pk")),
        "fork_points": fork_points_said(run) if "operate" in can else {},
        "can_fork": "operate" in can,
        "can_propose": "edit" in can and bool(run.forked_from_id),
        "fork_caveat": forks.fork_caveat(run),
    }
