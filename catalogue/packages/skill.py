"""An agent package's `SKILL.md` (docs/packages.md): front matter `name`, `description`,
`model`, `isolation` (`worktree`: the agent works in its own working copy) and `auto_approve`
(false: every tool call waits for a person; absent: true, as in rysh — an agent runs
unattended); the body is the agent's instructions.

Pure: stdlib + PyYAML, no Django, no I/O.
"""

from __future__ import annotations

import difflib
import functools
import posixpath
import re
from dataclasses import dataclass

from budgets.lineup import BY_ID, model_info
from catalogue.recipe.reader import BAD, Reader, RecipeError, split_frontmatter

SKILL_KEYS = ("name", "description", "model", "isolation", "auto_approve")
ISOLATIONS = ("worktree", "none")
_SKILL_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")


@dataclass(frozen=True)
class Skill:
    name: str
    instructions: str
    description: str = ""
    model: str | None = None
    worktree: bool = False
    auto_approve: bool = True


def read_skill(text: str, *, path: str = "SKILL.md") -> Skill:
    """The agent, or RecipeError with every issue found (file, line, field, expected)."""
    label = posixpath.basename(path) or path
    front = split_frontmatter(text, label)
    reader = Reader(label, front.first_line, {"": SKILL_KEYS})
    try:
        keys = reader.top_level(front.yaml) if front.yaml is not None else {}
        values = reader.read_keys(
            keys,
            "",
            {
                "name": functools.partial(
                    reader.matching,
                    pattern=_SKILL_NAME_RE,
                    what="an agent name of lowercase letters, digits, '.', '_' or '-'",
                ),
                "description": reader.text,
                "model": functools.partial(_read_model, reader),
                "isolation": functools.partial(reader.choice, options=ISOLATIONS),
                "auto_approve": reader.boolean,
            },
        )
        if "name" not in keys and not reader.broken:
            where = 1 if front.yaml is not None else None
            reader.add_at(where, "name", "missing: an agent's SKILL.md names it in its front matter (name: ...)")
    finally:
        reader.close()
    instructions = front.body.strip()
    if not instructions:
        reader.add_at(
            front.body_line,
            "instructions",
            "the agent's instructions (the text after the front matter) are empty: write how the agent works",
        )
    if reader.issues:
        raise RecipeError(sorted(reader.issues, key=lambda i: (i.line or 0, i.column or 0)))
    isolation = values.pop("isolation", "none")
    return Skill(instructions=instructions, worktree=isolation == "worktree", **values)


def _read_model(r: Reader, node, field) -> str | None:
    value = r.value(node, field)
    if value is BAD:
        return None
    if isinstance(value, str) and model_info(value.strip()) is not None:
        return value.strip()
    close = difflib.get_close_matches(str(value), list(BY_ID), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    r.add(node, field, f"unknown model {value!r}: expected a model of the lineup, such as claude-sonnet-5{hint}")
    return None
