"""Placeholders in a recipe's prompts (docs/recipes.md): `{{args}}`, `{{arg1}}`…, `{{<name>}}` by
position in `args:`, `{{output_dir}}` / `{{results_dir}}`, in a recipe with a working copy
`{{workdir}}`, the folder its commands run in (docs/recipes.md), and in a run an `on_success` chain
started `{{previous_results_dir}}` / `{{previous_run}}` (docs/chains.md). Pure."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from catalogue.spec import RecipeSpec

BUILTIN_PLACEHOLDERS = ("args", "output_dir", "results_dir", "workdir", "previous_results_dir", "previous_run")
# filled once for the whole run when it is armed (fill_chain), so render leaves them as written
CHAIN_PLACEHOLDERS = ("previous_results_dir", "previous_run")

_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_POSITIONAL_RE = re.compile(r"arg([1-9][0-9]{0,5})\Z")  # bounded: int() of huge digit runs fails


def placeholders(text: str) -> list[str]:
    """Names used as `{{ name }}` in `text`, each once, in order of first use."""
    return list(dict.fromkeys(_PLACEHOLDER_RE.findall(text)))


def render(template: str, *, spec: RecipeSpec, args: Sequence[str], output_dir: str, workdir: str | None = None) -> str:
    """Fill the placeholders of docs/recipes.md; a missing argument becomes "".

    `workdir` is the working folder as the agent's commands see it (a run's copy, or what a
    preview says it will be); without one, `{{workdir}}` is left as written, like any name
    nothing fills. One pass only: an argument whose value itself contains `{{...}}` is not
    expanded again.
    """
    args = list(args)

    def fill(match: re.Match[str]) -> str:
        value = workdir if match[1] == "workdir" else _fill(match[1], spec, args, output_dir)
        return match[0] if value is None else value

    return _PLACEHOLDER_RE.sub(fill, template)


def fill_chain(spec: RecipeSpec, *, results_dir: str, run: str) -> RecipeSpec:
    """The recipe with `{{previous_results_dir}}` and `{{previous_run}}` filled in every prompt:
    the results folder and id of the run whose success started this one, or "" for a run no
    chain started (like a missing argument)."""

    def fill(text: str | None) -> str | None:
        return fill_chain_text(text, results_dir=results_dir, run=run) if text else text

    do = dataclasses.replace(spec.do, takeover_prompt=fill(spec.do.takeover_prompt))
    loop = dataclasses.replace(
        spec.loop_while, until=fill(spec.loop_while.until), iterate_with=fill(spec.loop_while.iterate_with)
    )
    return dataclasses.replace(spec, prompt=fill(spec.prompt), do=do, loop_while=loop)


def fill_chain_text(text: str, *, results_dir: str, run: str) -> str:
    """`{{previous_results_dir}}` and `{{previous_run}}` filled in one text (see fill_chain)."""
    values = {"previous_results_dir": results_dir, "previous_run": run}
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m[1], m[0]), text)


def unfilled_placeholders(spec: RecipeSpec, args: Sequence[str] | None) -> list[str]:
    """Warnings for `check`: placeholders nothing fills, and (given args) missing arguments."""
    texts = (
        ("prompt", spec.prompt),
        ("takeover_prompt", spec.do.takeover_prompt),
        ("until", spec.loop_while.until),
        ("iterate_with", spec.loop_while.iterate_with),
    )
    warnings = []
    for where, text in texts:
        for name in placeholders(text or ""):
            if name == "workdir" and spec.workdir is None:
                warnings.append(
                    f"{{{{workdir}}}} in {where}: only a recipe with a working copy fills it "
                    "(a code recipe, or a task with workdir:)"
                )
            elif not _is_known(name, spec):
                warnings.append(f"{{{{{name}}}}} in {where} is not a known placeholder: nothing fills it")
            elif args is not None and _is_missing(name, spec, args):
                warnings.append(f'{{{{{name}}}}} in {where}: no argument given, it becomes ""')
    return warnings


def _arg_index(name: str, spec: RecipeSpec) -> int | None:
    """Position of an argument placeholder (`arg2` -> 1, a named arg -> its place)."""
    positional = _POSITIONAL_RE.match(name)
    if positional:
        return int(positional[1]) - 1
    if name in spec.args:
        return spec.args.index(name)
    return None


def _fill(name: str, spec: RecipeSpec, args: list[str], output_dir: str) -> str | None:
    if name == "args":
        return " ".join(args)
    if name in ("output_dir", "results_dir"):
        return output_dir
    index = _arg_index(name, spec)
    if index is None:
        return None
    return args[index] if index < len(args) else ""


def _is_known(name: str, spec: RecipeSpec) -> bool:
    return name in BUILTIN_PLACEHOLDERS or _arg_index(name, spec) is not None


def _is_missing(name: str, spec: RecipeSpec, args: Sequence[str]) -> bool:
    if name == "args":
        return not args
    index = _arg_index(name, spec)
    return index is not None and index >= len(args)
