"""Recipe files: markdown with YAML frontmatter -> a validated RecipeSpec (docs/recipes.md).

A recipe lives at `.rysh/automations/<webs|tasks|codes>/<name>.md`. The frontmatter is the
control envelope, the body is the task prompt; a file without frontmatter is all prompt.

Messages: every refusal is a RecipeIssue printed as

    halilagin-medium.md:14 loop.do.budget.watch.takeover_when: expected a whole number from 10 to 99, got 5

The file is named by its basename (the `path` argument's last segment, whatever
directory it was given with), lines are 1-based lines of the whole file (not of the
frontmatter), and the field is the full dotted path of the key. All the issues of a
file are collected and raised together in one RecipeError; parse_recipe raises
nothing else for any input text.

The package: `reader` (frontmatter, YAML nodes with lines, the issues), `fields` (which keys
exist where, one reader per field), `placeholders` (filling the prompts); this module is the
public face. Pure: stdlib + PyYAML, no Django, no I/O except load_recipe and resolve_output_dir.
"""

from __future__ import annotations

import os
import pathlib

from catalogue.recipe.fields import (
    HOMES,
    NAME_RE,
    URL_RE,
    default_output_dir,
    foreign_output_dir,
    normal_workdir,
    own_output_dir,
    read_recipe,
)
from catalogue.recipe.placeholders import fill_chain, fill_chain_text, placeholders, render, unfilled_placeholders
from catalogue.recipe.reader import Reader, RecipeError, RecipeIssue, split_frontmatter
from catalogue.spec import RecipeSpec

# A recipe is a page of instructions; anything bigger is refused before YAML is parsed, so
# reading, checking and diffing one stays cheap (the same cap guards the markdown view).
MAX_RECIPE_BYTES = 256 * 1024

__all__ = [
    "MAX_RECIPE_BYTES",
    "NAME_RE",
    "URL_RE",
    "RecipeError",
    "RecipeIssue",
    "fill_chain",
    "fill_chain_text",
    "load_recipe",
    "normal_workdir",
    "parse_recipe",
    "placeholders",
    "render",
    "resolve_output_dir",
    "unfilled_placeholders",
]


def parse_recipe(text: str, *, path: str | os.PathLike, kind: str | None = None, name: str | None = None) -> RecipeSpec:
    """Validate one recipe's text and return its RecipeSpec, or raise RecipeError.

    `path` is used to name the file in messages (its basename), to take the name
    from (its stem, unless `name` is given) and to find the kind from the folder
    (`.rysh/automations/webs|tasks|codes/`). `kind` is what the CLI asked for (`web`/`task`/`code`).
    """
    path = os.fspath(path)
    label = os.path.basename(path) or path
    # Measured in UTF-8 bytes, as the file is; a character takes at most 4 of them.
    if len(text) * 4 > MAX_RECIPE_BYTES and (size := len(text.encode("utf-8", "surrogatepass"))) > MAX_RECIPE_BYTES:
        raise _too_big(label, size)
    front = split_frontmatter(text, label)
    reader = Reader(label, front.first_line, HOMES)
    try:
        keys = reader.top_level(front.yaml) if front.yaml is not None else {}
        fields = read_recipe(reader, keys, path, kind, name)
    finally:
        reader.close()
    prompt = front.body.strip()
    if not prompt:
        reader.add_at(
            front.body_line,
            "prompt",
            "the task prompt (the text after the frontmatter) is empty: write what the agent should do",
        )
    if reader.issues:
        raise RecipeError(sorted(reader.issues, key=lambda i: (i.line or 0, i.column or 0)))
    return RecipeSpec(path=path, prompt=prompt, **fields)


def load_recipe(path: str | os.PathLike, *, kind: str | None = None) -> RecipeSpec:
    """Read a recipe file (UTF-8) and parse it; unreadable files are a RecipeError too."""
    label = os.path.basename(os.fspath(path))
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_RECIPE_BYTES:
                raise _too_big(label, size)
            data = handle.read(MAX_RECIPE_BYTES + 1)  # a file still growing is capped too
        if len(data) > MAX_RECIPE_BYTES:
            raise _too_big(label, len(data), more=True)
        # as text mode reads it: \r\n and \r become \n
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        raise RecipeError(
            [RecipeIssue(label, None, "file", f"is not UTF-8 text ({exc.reason} at byte {exc.start})")]
        ) from None
    except OSError as exc:
        raise RecipeError([RecipeIssue(label, None, "file", f"cannot be read: {exc.strerror or exc}")]) from None
    return parse_recipe(text, path=path, kind=kind)


def _too_big(label: str, size: int, *, more: bool = False) -> RecipeError:
    got = f"more than {MAX_RECIPE_BYTES:,} bytes" if more else f"{size:,} bytes"
    return RecipeError(
        [
            RecipeIssue(
                label,
                None,
                "file",
                f"expected a recipe of at most {MAX_RECIPE_BYTES:,} bytes ({MAX_RECIPE_BYTES // 1024} KB), "
                f"got {got}: it is refused before its YAML is read; make it smaller",
            )
        ]
    )


def resolve_output_dir(spec: RecipeSpec, results_root: str | os.PathLike) -> pathlib.Path:
    """The real (symlink-free) output folder, refused unless it is inside the results root and is
    not the root itself nor another recipe's `<webs|tasks|codes>/<name>` folder."""
    relative = spec.output_dir or default_output_dir(spec.kind, spec.name)
    label = os.path.basename(spec.path) or spec.path

    def refuse(message: str) -> RecipeError:
        return RecipeError([RecipeIssue(label, None, "output_dir", message)])

    try:
        root = os.path.realpath(results_root)
        lexical = os.path.normpath(os.path.join(root, relative))
        target = os.path.realpath(lexical)
    except (OSError, ValueError) as exc:
        raise refuse(f"{relative!r} cannot be resolved: {exc}") from None
    if not _inside(target, root):
        how = " through a symbolic link" if _inside(lexical, root) else ""
        raise refuse(
            f"{relative!r} leads{how} to {target}, outside the results root {root}: output_dir must stay inside it"
        )
    # Inside the root, but maybe the root itself or another recipe's folder (as written, or
    # where a symbolic link leads): refused, so one recipe cannot fill or read another's results.
    for where, how in ((lexical, ""), (target, " through a symbolic link")):
        foreign = foreign_output_dir(os.path.relpath(where, root).replace(os.sep, "/"), spec.kind, spec.name)
        if foreign is not None:
            raise refuse(
                f"expected {own_output_dir(spec.kind, spec.name)}, got {relative!r}, which leads{how} to {foreign}"
            )
    return pathlib.Path(target)


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root
