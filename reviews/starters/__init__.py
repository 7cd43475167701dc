"""Starter recipes for the editor's "create from a template": one markdown file per starter
beside this module, so a starter is written, diffed and checked as the recipe file it is."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from catalogue.spec import Kind

FOLDER = Path(__file__).resolve().parent


class Starter(NamedTuple):
    """One starter; a tuple so `starter[0]` is the link's title and `starter[1]` the text."""

    title: str
    text: str
    kind: Kind


# key (the file's stem, and the editor's ?template=) -> (link title, kind), in the editor's order
_INDEX = {
    "task": ("A task", Kind.TASK),
    "task-loop": ("A task that repeats until a goal holds", Kind.TASK),
    "web": ("A web recipe (drives a browser)", Kind.WEB),
    "code": ("A coding loop (works in its own copy of the repository)", Kind.CODE),
}


def load_starters() -> dict[str, Starter]:
    """Every starter, its text read from `<key>.md` in this folder."""
    return {
        key: Starter(title, (FOLDER / f"{key}.md").read_text(encoding="utf-8"), kind)
        for key, (title, kind) in _INDEX.items()
    }


STARTERS = load_starters()
TEMPLATES = STARTERS  # the name the editor view knows them by
