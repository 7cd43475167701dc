"""From a good fork to a change (docs/forks.md): the recipe file with the fork's edits applied —
the prompt (the body), `until`, `iterate_with` and the loop's budget (front matter keys) — every
other byte as it was, opened as a change request reviewed like any other."""

from __future__ import annotations

import json

import yaml

from reviews.models import ChangeRequest
from reviews.services import change_request_open
from runs.forks.compare import edits_in_force
from runs.models import Run
from rysh_site.roles import require

# fork edit -> where it lives in the recipe's front matter (the prompt is the body)
KEYS = {
    "until": ("loop", "while", "prompts", "until"),
    "iterate_with": ("loop", "while", "prompts", "iterate_with"),
    "budget": ("loop", "while", "budget"),
}
PROPOSED = ("prompt", *KEYS)


class EditRefused(ValueError):
    """The edits cannot be written into this file; the message says where and why."""


def recipe_with_edits(text: str, edits: dict, *, label: str = "recipe") -> str:
    """`text` with `edits` ({"prompt", "until", "iterate_with", "budget"}: new values) written in:
    a key's value replaced where it stands (or the key added under its parents), the body
    replaced by the prompt; the rest of the file byte for byte."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text.removeprefix("\ufeff")
    head, region, tail, body = _split(text, label)
    if not head and not any(edits.get(key) is not None for key in KEYS):
        head = tail = ""  # no front matter and none needed
    for key, path in KEYS.items():
        if edits.get(key) is not None:
            if key == "budget":
                path = _budget_path(region, path)
            region = yaml_set(region, path, str(edits[key]), label=label)
    if edits.get("prompt") is not None:
        body = edits["prompt"]
    if tail and not head:  # a file without front matter that now needs one
        head = "---\n"
    return bom + head + region + tail + body


def _split(text: str, label: str) -> tuple[str, str, str, str]:
    """(opening ---, the YAML, closing ---, body); a file without front matter gets one."""
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return "", "", "---\n", text
    at = len(lines[0]) + 1
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            end = at + len(lines[index]) + (1 if index < len(lines) - 1 else 0)
            return text[: len(lines[0]) + 1], text[len(lines[0]) + 1 : at], text[at:end], text[end:]
        at += len(lines[index]) + 1
    raise EditRefused(f"{label}, line 1: the front matter is never closed")


def _budget_path(region: str, path: tuple[str, ...]) -> tuple[str, ...]:
    """`budget: 20b` or `budget: {size: 20b}`: the size is what changes."""
    node = _find(_compose(region, "recipe"), path)
    return (*path, "size") if isinstance(node, yaml.MappingNode) else path


def yaml_set(region: str, path: tuple[str, ...], value: str, *, label: str = "recipe") -> str:
    """The YAML text with the scalar at `path` set to `value`: replaced in place when present,
    else the missing keys added at the end of the deepest mapping that exists."""
    root = _compose(region, label)
    node, depth = root, 0
    while depth < len(path) and isinstance(node, yaml.MappingNode):
        child = next((v for k, v in node.value if getattr(k, "value", None) == path[depth]), None)
        if child is None:
            break
        node, depth = child, depth + 1
    if depth == len(path):
        if not isinstance(node, yaml.ScalarNode):
            raise EditRefused(f"{label}, line {node.start_mark.line + 2}: {'.'.join(path)} is not a single value")
        start, end = node.start_mark.index, node.end_mark.index
        replaced = region[start:end]
        return region[:start] + scalar(value) + ("\n" if replaced.endswith("\n") else "") + region[end:]
    if node is not None and not isinstance(node, yaml.MappingNode):
        where = ".".join(path[:depth]) or "the front matter"
        raise EditRefused(f"{label}, line {node.start_mark.line + 2}: {where} is not a mapping of keys")
    if node is not None and node.flow_style:
        where = ".".join(path[:depth])
        raise EditRefused(
            f"{label}, line {node.start_mark.line + 2}: {where} is written inline ({{…}}); edit it by hand"
        )
    return _insert(region, node, path[depth:], value, depth)


def _insert(region: str, node, missing: tuple[str, ...], value: str, depth: int) -> str:
    if node is None or not node.value:
        column, at = depth * 2, len(region)
    else:
        column = node.value[0][0].start_mark.column
        at = _line_start(region, node.end_mark.index)
    lines = []
    for i, key in enumerate(missing):
        pad = " " * (column + 2 * i)
        lines.append(f"{pad}{key}: {scalar(value)}" if i == len(missing) - 1 else f"{pad}{key}:")
    added = "\n".join(lines) + "\n"
    before = region[:at]
    if before and not before.endswith("\n"):
        before += "\n"
    return before + added + region[at:]


def _line_start(region: str, index: int) -> int:
    """Where a block mapping's entries end: the start of the line its end mark is on (a dedented
    key's indentation or the end of the text), never in the middle of a value."""
    start = region.rfind("\n", 0, index) + 1
    return start if region[start:index].strip() == "" else index


def _compose(region: str, label: str):
    try:
        return yaml.compose(region)
    except yaml.YAMLError as exc:
        raise EditRefused(f"{label}: the front matter is not valid YAML ({exc})") from exc


def _find(node, path: tuple[str, ...]):
    for key in path:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
    return node


def scalar(value: str) -> str:
    """A YAML scalar that reads back as `value`: plain when it can be, else double-quoted."""
    if value and "\n" not in value and value == value.strip():
        try:
            if yaml.safe_load(value) == value and not value.startswith(("'", '"', "&", "*", "!", "|", ">")):
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False)


# -- the service ----------------------------------------------------------------------------------


def fork_edits_proposed(run: Run) -> dict:
    """The fork's edits a change can carry (prompt, until, iterate_with, budget): its own and,
    for a fork of a fork, those it ran with from its ancestors."""
    return {k: v for k, v in edits_in_force(run).items() if k in PROPOSED}


def fork_propose(*, run: Run, user) -> ChangeRequest:
    """Open a change request of the run's recipe file with the fork's edits applied to the file
    as it is now on the tracked branch. Raises EditRefused (nothing to propose, a file the edits
    cannot be written into) or the reviews' ReviewError."""
    require(user, "edit")
    edits = fork_edits_proposed(run)
    if not run.forked_from_id or not edits:
        raise EditRefused(f"run #{run.pk} carries no edits of the prompt, until or budget: nothing to propose")
    latest = run.recipe.latest if run.recipe_id and run.recipe else None
    if latest is None:
        raise EditRefused(f"{run.target} is not in the catalogue: there is no recipe file to change")
    text = recipe_with_edits(latest.text, edits, label=latest.path)
    message = (
        f"Edit {run.target}: the edits of run #{run.pk} (forked from run #{run.forked_from_id} at pass {run.fork_pass})"
    )
    return change_request_open(user=user, kind=run.kind, name=run.name, text=text, message=message)
