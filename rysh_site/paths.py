"""One check for every name that reaches the disk from outside: a URL, a model's tool call, a
row in the database. `safe_child` is the only place that decides what "inside a folder" means.
"""

from __future__ import annotations

import os
from pathlib import Path


class UnsafePath(ValueError):
    """A name that would reach outside its folder (or names no file at all)."""


def safe_child(root: str | os.PathLike, name: str | os.PathLike, *, folder: str = "the folder") -> Path:
    """`root / name`, resolved, or UnsafePath when it is not strictly below root.

    Resolving first means `..` and symlinks are judged by where they really lead: a link
    inside the folder that points out is refused, one that stays inside is fine. Absolute
    names are refused outright, even one that happens to point inside: callers hand out
    names relative to root, never paths. `folder` names root in the messages (a model reads
    them: "the results folder" tells it more than a server path would).
    """
    text = os.fspath(name) if isinstance(name, (str, os.PathLike)) else None
    if not isinstance(text, str) or not text.strip():
        raise UnsafePath("a file name must be a non-empty text")
    if "\x00" in text:
        raise UnsafePath(f"{text!r} holds a NUL byte")
    if Path(text).is_absolute():
        raise UnsafePath(f"{text!r} is an absolute path, not a name inside {folder}")
    base = Path(root).resolve()
    target = (base / text).resolve()
    if base not in target.parents:
        raise UnsafePath(f"{text!r} is outside {folder}")
    return target
