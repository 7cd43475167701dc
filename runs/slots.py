"""Which runs of one recipe may be active at once (docs/running-loops.md): its slot.

A web recipe shares one browser profile and a plain task one results folder, so each has one
slot: its target (`task/reading-list`). A recipe with a working copy (a code recipe, or a task
with `workdir:`) gives every run its own copy, so its runs may go side by side when their
arguments (or `--workdir`) differ: the slot is the target and a label of those, and each slot
keeps its results in a folder of its own under the recipe's, so side-by-side runs never judge
or snapshot each other's files. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

# the results folder of a coding run given no arguments and no --workdir
PLAIN_FOLDER = "no-args"
_SLUG_CHARS = 40


def slot_label(args: Sequence[str], workdir: str | None) -> str | None:
    """`add-a-sum-command-1f3a9c2e`: the arguments and the --workdir override, readable and
    distinct (the digest tells apart two that slug alike); None when there are neither."""
    if not args and workdir is None:
        return None
    words = [*args, *(["workdir", workdir] if workdir is not None else [])]
    slug = re.sub(r"[^a-z0-9]+", "-", " ".join(words).lower()).strip("-")[:_SLUG_CHARS].rstrip("-")
    digest = hashlib.sha256(json.dumps([list(args), workdir]).encode()).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else digest


def run_slot(target: str, *, side_by_side: bool, args: Sequence[str], workdir: str | None) -> str:
    """What one active run holds: `code/softdev-loop/add-a-sum-command-1f3a9c2e`, or the
    target itself for a recipe whose runs cannot go side by side (and a bare coding run)."""
    label = slot_label(args, workdir) if side_by_side else None
    return target if label is None else f"{target}/{label}"


def slot_folder(args: Sequence[str], workdir: str | None) -> str:
    """The folder under the recipe's results folder where a coding run of this slot saves."""
    return slot_label(args, workdir) or PLAIN_FOLDER
