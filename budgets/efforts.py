"""Which models take an effort setting and adaptive thinking (docs/recipes.md `effort`). Pure.

`effort:` is sent as the Messages API's `output_config.effort`, with `thinking: adaptive`:
models from claude-opus-4-7 on and the 5.x generation take them. Older models do not take
`output_config.effort`, and from 4.7 on the old `thinking.budget_tokens` setting is refused,
so this code never sends `budget_tokens` at all: a recipe on an older model gets no effort
and no thinking (the reader refuses `effort:` for it at its line).
"""

from __future__ import annotations

import re

EFFORTS = ("low", "medium", "high")
FIRST_WITH_EFFORT = (4, 7)  # claude-opus-4-7
# claude-<family>-<major>[-<minor>][-<date>]: claude-opus-4-7, claude-sonnet-5, claude-haiku-4-5-20251001
_NAME_RE = re.compile(r"claude-[a-z]+-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?(?:[-@].*)?\Z")


def generation(model: str) -> tuple[int, int] | None:
    """(major, minor) of a current-style Claude model name, None for anything else (old
    `claude-3-5-sonnet-…` names, the scripted model, a proxy's alias)."""
    match = _NAME_RE.match(model or "")
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def takes_effort(model: str | None) -> bool:
    """True when the model takes `output_config.effort` (and adaptive thinking)."""
    version = generation(model or "")
    return version is not None and version >= FIRST_WITH_EFFORT


def effort_refusal(model: str) -> str:
    return (
        f"{model} does not take an effort setting; effort needs claude-opus-4-7 or later "
        "(or a 5.x model): remove effort or pin such a model"
    )
