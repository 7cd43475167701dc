"""Eval cases in rysh's format, read from a tree of files (pure: no Django, no git).

A case is a folder `<recipe folder>/<name>/evals/<case>/` (rysh packages: `<package>/evals/<case>/`):
- `task.md`: the body is the task; optional front matter `until:` (the goal, when set) and
  `args:` (a mapping of the recipe's placeholders to values);
- `expect.yaml`: rysh's five assertions `files_changed`, `commands_allowed`,
  `commands_forbidden`, `output_matches`, `max_tokens`;
- `judge.md` (optional): a rubric; empty is an error (delete it or write a rubric);
- `files/` (optional): the tree a `workdir:` recipe's working copy starts from.
A folder without `task.md` or `expect.yaml` is a broken case, listed with its error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

EXPECT_KEYS = ("files_changed", "commands_allowed", "commands_forbidden", "output_matches", "max_tokens")


@dataclass(frozen=True)
class CaseError:
    """Where and what: `path` (repository-relative file), `line` (1-based, 0 when the whole file),
    `field` (the key, or ""), and the message saying what was expected."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.field + ': ' if self.field else ''}{self.message}"


@dataclass(frozen=True)
class Expect:
    files_changed: tuple[str, ...] | None = None  # None: not asserted
    commands_allowed: tuple[str, ...] | None = None
    commands_forbidden: tuple[str, ...] = ()
    output_matches: tuple[str, ...] = ()
    max_tokens: int | None = None


@dataclass(frozen=True)
class Case:
    name: str
    folder: str  # repository-relative folder of the case
    task: str = ""  # task.md's body
    until: str | None = None
    args: Mapping[str, str] = field(default_factory=dict)
    expect: Expect = field(default_factory=Expect)
    rubric: str | None = None  # judge.md, when present
    files: Mapping[str, bytes] = field(default_factory=dict)  # files/ tree, relative to files/
    digest: str = ""  # sha256 over the case's files (with the recipe text, for "same version")
    errors: tuple[CaseError, ...] = ()  # non-empty: a broken case, never run

    @property
    def broken(self) -> bool:
        return bool(self.errors)


def cases_folder(recipe_path: str) -> str:
    """`codes/fix-the-test.md` -> `codes/fix-the-test/evals` (beside its default results)."""
    raise NotImplementedError


def read_cases(tree: Mapping[str, bytes], folder: str) -> list[Case]:
    """Every case under `folder` (an `evals/` folder) of `tree` (repository-relative path -> bytes),
    sorted by name; broken ones carry their errors."""
    raise NotImplementedError


def parse_expect(text: str, *, path: str) -> tuple[Expect, list[CaseError]]:
    raise NotImplementedError


def parse_task(text: str, *, path: str) -> tuple[str, str | None, dict[str, str], list[CaseError]]:
    """(body, until, args, errors)."""
    raise NotImplementedError


def check_args(case: Case, placeholders: list[str], *, recipe: str) -> list[CaseError]:
    """A case's `args` must name placeholders the recipe has, and give every one it needs."""
    raise NotImplementedError
