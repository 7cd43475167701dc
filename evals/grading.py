"""Grading a case: rysh's assertions checked against what a run did (pure: no Django).

Each failed assertion names what broke it: the out-of-scope file, the forbidden command, the
regex with no match, the tokens over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evals.format import Expect


@dataclass(frozen=True)
class Evidence:
    """What a run did: the files its diff changed, the commands its shell ran (each as the agent
    wrote it), its final answer, its result files (name -> text) and the tokens the ledger counted."""

    changed_files: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    final_answer: str = ""
    results: Mapping[str, str] = field(default_factory=dict)
    tokens: int = 0


@dataclass(frozen=True)
class Failure:
    assertion: str  # files_changed | commands_allowed | commands_forbidden | output_matches | max_tokens | rubric
    message: str

    def row(self) -> dict:
        return {"assertion": self.assertion, "message": self.message}


def grade(expect: Expect, evidence: Evidence) -> list[Failure]:
    raise NotImplementedError


def path_matches(pattern: str, path: str) -> bool:
    """rysh's path globs: `*` and `?` within one path segment, `**` across segments."""
    raise NotImplementedError


def command_matches(pattern: str, command: str) -> bool:
    """Shell-glob patterns on a command as run (`*` matches anything, spaces and slashes too)."""
    raise NotImplementedError
