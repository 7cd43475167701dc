"""The recipe's `loop:` block (and legacy `step:`): `loop.do` with its budget, watch and floor, and
`loop.while` with the judge's model and effort (docs/recipes.md, docs/running-loops.md). Each reader
takes the Reader, a YAML node and the key's dotted path, records why it refused a value, and
returns what the spec keeps.

Pure: stdlib + PyYAML, no Django, no I/O.
"""

from __future__ import annotations

import dataclasses
import functools

import yaml

from budgets.efforts import EFFORTS, effort_refusal, takes_effort
from budgets.plan import DEFAULT_FLOOR, Floor
from catalogue.recipe.goals import goal_warning
from catalogue.recipe.reader import BAD, Reader, RecipeIssue
from catalogue.spec import MAX_INTERVAL, DoSpec, WhileSpec

LOOP_KEYS = ("do", "while")
DO_KEYS = (
    "interval",
    "max_iterations",
    "max_duration",
    "auto_continue",
    "auto_approve",
    "budget",
    "model",
    "effort",
)
DO_BUDGET_KEYS = ("size", "watch")
WATCH_KEYS = ("takeover_when", "takeover_prompt", "model", "effort", "floor")
FLOOR_KEYS = ("trigger_iterations", "trigger_duration", "trigger_size", "iterations", "duration", "size")
WHILE_KEYS = ("enabled", "max_iterations", "max_duration", "budget", "prompts", "model", "judge_model", "effort")
WHILE_BUDGET_KEYS = ("size",)
PROMPTS_KEYS = ("until", "iterate_with")

# rysh's two levels above high: this dashboard sends only the Messages API's low, medium, high
RYSH_ONLY_EFFORTS = ("xhigh", "max")


def read_effort(r: Reader, node, field) -> str | None:
    """low, medium or high; rysh's xhigh and max are refused with what to write instead."""
    value = r.value(node, field)
    if isinstance(value, str) and value in EFFORTS:
        return value
    if isinstance(value, str) and value in RYSH_ONLY_EFFORTS:
        r.add(
            node,
            field,
            f"expected {' or '.join(EFFORTS)}, got {value!r}: rysh's {value} is not sent by this dashboard "
            "(write high for the most effort)",
        )
    elif value is not BAD:
        r.expected(node, field, " or ".join(EFFORTS))
    return None


def read_loop(r: Reader, keys: dict) -> tuple[DoSpec, WhileSpec, list[str], str]:
    """(do, while, warnings, where the do block was read: `loop.do` or legacy `step`)."""
    loop = (r.mapping(keys["loop"], "loop", LOOP_KEYS) if "loop" in keys else None) or {}
    do = _read_do(r, loop["do"], "loop.do") if "do" in loop else DoSpec()
    where = "loop.do"
    warnings = []
    if "step" in keys:
        # Legacy `step` is still validated: garbage in the file is an error even if unused.
        legacy = _read_do(r, keys["step"], "step")
        if "do" in loop:
            warnings.append("step is ignored: loop.do is present")
        else:
            do, where = legacy, "step"
    loop_while = _read_while(r, loop["while"], "loop.while", warnings) if "while" in loop else WhileSpec()
    return do, loop_while, warnings, where


def refuse_pinned_efforts(
    r: Reader, do: DoSpec, loop_while: WhileSpec, *, where: str, model: str | None, judge: str | None
) -> None:
    """Each leg's effort against the model it pins (or inherits from the recipe's top level);
    an unpinned leg is checked against the installation's default (catalogue.checks)."""
    task_model = do.model or model
    seats = (
        (do.effort, do.effort_line, task_model, f"{where}.effort"),
        (do.watch_effort, do.watch_effort_line, do.watch_model or task_model, f"{where}.budget.watch.effort"),
        (loop_while.effort, loop_while.effort_line, loop_while.judge_model or judge, "loop.while.effort"),
    )
    for effort, line, pinned, field in seats:
        if effort is not None and pinned is not None and not takes_effort(pinned):
            r.add_at(line, field, effort_refusal(pinned))


def _read_do(r: Reader, node, field: str) -> DoSpec:
    keys = r.mapping(node, field, DO_KEYS)
    if keys is None:
        return DoSpec()
    values = r.read_keys(
        keys,
        field,
        {
            "interval": functools.partial(r.whole, low=1, high=MAX_INTERVAL),
            "max_iterations": functools.partial(r.whole, low=1),
            "max_duration": r.duration,
            "auto_continue": r.boolean,
            "auto_approve": r.boolean,
            "model": r.text,
            "effort": functools.partial(read_effort, r),
        },
    )
    if "effort" in values:
        values["effort_line"] = r.line(keys["effort"])
    if "budget" in keys:
        values.update(_read_do_budget(r, keys["budget"], f"{field}.budget"))
    return DoSpec(**values)


def _read_do_budget(r: Reader, node, field: str) -> dict:
    """DoSpec keywords from `budget:` — a mapping, or just a size (`budget: 4b`) like while's."""
    if isinstance(node, yaml.ScalarNode):
        size = r.tokens(node, field)
        return {} if size is None else {"budget_size": size}
    keys = r.mapping(node, field, DO_BUDGET_KEYS)
    if keys is None:
        return {}
    values = {}
    if "size" in keys and (size := r.tokens(keys["size"], f"{field}.size")) is not None:
        values["budget_size"] = size
    if "watch" in keys and (watch := r.mapping(keys["watch"], f"{field}.watch", WATCH_KEYS)):
        values.update(_read_watch(r, watch, f"{field}.watch"))
    return values


def _read_watch(r: Reader, watch: dict, field: str) -> dict:
    values = r.read_keys(
        watch,
        field,
        {
            "takeover_when": functools.partial(r.whole, low=10, high=99),
            "takeover_prompt": r.text,
            "model": r.text,
            "effort": functools.partial(read_effort, r),
            "floor": functools.partial(_read_floor, r),
        },
    )
    renamed = {"model": "watch_model", "effort": "watch_effort"}
    values = {renamed.get(key, key): value for key, value in values.items()}
    if "watch_effort" in values:
        values["watch_effort_line"] = r.line(watch["effort"])
    return values


def _read_floor(r: Reader, node, field: str) -> Floor | None:
    """`floor:` — any of the six values; absent ones keep the built-in floor's."""
    keys = r.mapping(node, field, FLOOR_KEYS)
    if keys is None:
        return None
    values = r.read_keys(
        keys,
        field,
        {
            "trigger_iterations": functools.partial(r.whole, low=1),
            "trigger_duration": r.duration,
            "trigger_size": r.tokens,
            "iterations": functools.partial(r.whole, low=1),
            "duration": r.duration,
            "size": r.tokens,
        },
    )
    if len(values) < len(keys):  # a value was refused: its issue is recorded, the floor is not used
        return None
    trigger = DEFAULT_FLOOR.trigger
    raise_to = DEFAULT_FLOOR.raise_to
    trigger = dataclasses.replace(
        trigger,
        **_axes(values, steps="trigger_iterations", seconds="trigger_duration", tokens="trigger_size"),
    )
    raise_to = dataclasses.replace(raise_to, **_axes(values, steps="iterations", seconds="duration", tokens="size"))
    return Floor(trigger=trigger, raise_to=raise_to)


def _axes(values: dict, **keys: str) -> dict:
    return {axis: values[key] for axis, key in keys.items() if key in values}


def _read_while(r: Reader, node, field: str, warnings: list[str]) -> WhileSpec:
    keys = r.mapping(node, field, WHILE_KEYS)
    if keys is None:
        return WhileSpec()
    values = r.read_keys(
        keys,
        field,
        {
            "enabled": r.boolean,
            "max_iterations": functools.partial(r.whole, low=1),
            "max_duration": r.duration,
            "budget": functools.partial(_read_while_budget, r),
            "judge_model": r.text,
            "model": r.text,
            "effort": functools.partial(read_effort, r),
        },
    )
    if "effort" in values:
        values["effort_line"] = r.line(keys["effort"])
    if "model" in values:
        if "judge_model" in values:
            # rysh's spelling wins: a file written for rysh means its `model:`
            where = f"{field}.model"
            warnings.append(
                str(
                    RecipeIssue(
                        r.label,
                        r.line(keys["model"]),
                        where,
                        f"both {where} (line {r.line(keys['model'])}: {values['model']}) and {field}.judge_model "
                        f"(line {r.line(keys['judge_model'])}: {values['judge_model']}) name the judge's model; "
                        f"{where} wins: remove one",
                    )
                )
            )
        values["judge_model"] = values.pop("model")
    if "prompts" in keys and (prompts := r.mapping(keys["prompts"], f"{field}.prompts", PROMPTS_KEYS)):
        values.update(r.read_keys(prompts, f"{field}.prompts", {"until": r.text, "iterate_with": r.text}))
        if "until" in values and (warning := goal_warning(values["until"])):
            # Placed like an error (file:line field), at the line of the until: value.
            warnings.append(str(RecipeIssue(r.label, r.line(prompts["until"]), f"{field}.prompts.until", warning)))
    return WhileSpec(**values)


def _read_while_budget(r: Reader, node, field: str) -> int | None:
    """`budget: 20b` or `budget: {size: 20b}`."""
    if isinstance(node, yaml.ScalarNode):
        return r.tokens(node, field)
    keys = r.mapping(node, field, WHILE_BUDGET_KEYS)
    if keys and "size" in keys:
        return r.tokens(keys["size"], f"{field}.size")
    return None
