"""Long lists of ids in slices, so that one query names at most so many of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
MANY = 900  # ids one query names at most (older SQLite builds allow 999 variables)


def chunks(items: Sequence[T], size: int = MANY) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
