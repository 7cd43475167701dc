"""Two runs of a recipe side by side (docs/forks.md): per pass, verdict, tokens, $, time, diff stat;
the final results and the final diffs compared; the prompt edits between them."""

from __future__ import annotations

from runs.models import Run


def runs_compare(a: Run, b: Run):
    """The comparison the compare page, `auto task compare` and the API show (a dataclass)."""
    raise NotImplementedError
