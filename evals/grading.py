"""Grading a case: rysh's assertions checked against what a run did (pure: no Django).

Each failed assertion names what broke it: the out-of-scope file, the forbidden command, the
regex with no match, the tokens over.

A command as the agent wrote it may be a compound (`cd x && pytest -q; rm -rf y`): it is read with
the shell parser of the approval patterns (agents/shell_commands.py) and each simple command it
runs is checked (wrappers peeled: `timeout 5 pytest` also runs `pytest`). A command line that
cannot be read is checked as the whole string it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from agents.forked import Child
from agents.shell_commands import WILD, read_command_line
from evals.format import Expect

MAX_NAMED = 20  # failures of one assertion listed one by one; the rest counted
REGEX_SECONDS = 10.0  # output_matches: one regex over a run's final answer and result files


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
    """Every assertion of `expect` that `evidence` breaks, in the order of expect.yaml's keys;
    [] when all hold (the rubric is asked elsewhere: it costs a model call)."""
    failures: list[Failure] = []
    if expect.files_changed is not None:
        failures += _files_changed(expect.files_changed, evidence.changed_files)
    if expect.commands_allowed is not None or expect.commands_forbidden:
        parts = {command: command_parts(command) for command in dict.fromkeys(evidence.commands)}
        if expect.commands_allowed is not None:
            failures += _commands_allowed(expect.commands_allowed, parts)
        failures += _commands_forbidden(expect.commands_forbidden, parts)
    failures += _output_matches(expect.output_matches, evidence)
    if expect.max_tokens is not None and evidence.tokens > expect.max_tokens:
        over = evidence.tokens - expect.max_tokens
        failures.append(
            Failure("max_tokens", f"{evidence.tokens:,} tokens, {over:,} over max_tokens {expect.max_tokens:,}")
        )
    return failures


# --- files_changed ----------------------------------------------------------------------------


def _files_changed(globs: tuple[str, ...], changed: tuple[str, ...]) -> list[Failure]:
    outside = [path for path in sorted(set(changed)) if not any(path_matches(glob, path) for glob in globs)]
    allowed = ", ".join(globs) if globs else "nothing may change"
    return _capped("files_changed", [f"{path} changed, outside files_changed ({allowed})" for path in outside], "files")


def path_matches(pattern: str, path: str) -> bool:
    """rysh's path globs: `*` and `?` within one path segment, `**` across segments.

    `**` as a whole segment is any number of segments (`**/x` finds x in every folder, `a/**/b`
    also matches `a/b`), except at the end, where it is one or more: `src/**` is everything under
    src. `**` inside a segment is a `*`. Other characters stand for themselves (`[` too)."""
    pattern_parts = tuple(pattern.split("/"))
    path_parts = tuple(path.split("/"))
    if "" in path_parts:
        return False  # not a path git names
    return _match_segments(pattern_parts, path_parts)


@lru_cache(maxsize=4096)
def _match_segments(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    # positions reachable in the path after each pattern segment (no backtracking blow-up)
    reach = {0}
    last = len(pattern) - 1
    for index, segment in enumerate(pattern):
        if segment == "**":
            start = min(reach, default=None)
            if start is None:
                return False
            first = start + 1 if index == last else start
            reach = set(range(first, len(path) + 1))
        else:
            regex = _segment_regex(segment)
            reach = {at + 1 for at in reach if at < len(path) and regex.fullmatch(path[at])}
        if not reach:
            return False
    return len(path) in reach


@lru_cache(maxsize=4096)
def _segment_regex(segment: str) -> re.Pattern:
    return re.compile(_translate(segment, any_char="[^/]"), re.DOTALL)


def _translate(pattern: str, *, any_char: str) -> str:
    out = []
    for char in pattern:
        if char == "*":
            if not out or out[-1] != f"{any_char}*":  # runs of * are one *
                out.append(f"{any_char}*")
        elif char == "?":
            out.append(any_char)
        else:
            out.append(re.escape(char))
    return "".join(out)


# --- commands ---------------------------------------------------------------------------------


def command_matches(pattern: str, command: str) -> bool:
    """Shell-glob patterns on a command as run (`*` matches anything, spaces and slashes too).
    Runs of white space count as one space, and leading and trailing space is ignored on both."""
    return _command_regex(" ".join(pattern.split())).fullmatch(" ".join(command.split())) is not None


@lru_cache(maxsize=4096)
def _command_regex(pattern: str) -> re.Pattern:
    return re.compile(_translate(pattern, any_char="."), re.DOTALL)


@dataclass(frozen=True)
class CommandParts:
    whole: str  # the command line as the agent wrote it (stripped)
    simple: tuple[str, ...]  # each simple command it runs, as its words (`…` for an expansion)
    readable: bool  # False: the parser could not tell what it runs; only `whole` is checked


def command_parts(command: str) -> CommandParts:
    try:
        reading = read_command_line(command)
    except Exception:  # noqa: BLE001 - a parser failure is an unreadable line, checked whole
        return CommandParts(command.strip(), (), False)
    simple = tuple(
        dict.fromkeys(" ".join("…" if word is WILD else word for word in words) for words in reading.commands)
    )
    return CommandParts(command.strip(), simple, not reading.unreadable and bool(simple))


def _allowed(patterns: tuple[str, ...], text: str) -> bool:
    return any(command_matches(pattern, text) for pattern in patterns)


def _commands_allowed(patterns: tuple[str, ...], parts: dict[str, CommandParts]) -> list[Failure]:
    messages = []
    for part in parts.values():
        if not part.readable:
            if not _allowed(patterns, part.whole):
                messages.append(f"{part.whole!r} matches no pattern of commands_allowed (it cannot be read)")
            continue
        # A compound is allowed part by part: `cd *` must not allow `cd x && rm -rf y`.
        if len(part.simple) == 1 and _allowed(patterns, part.whole):
            continue
        for simple in part.simple:
            if not _allowed(patterns, simple):
                of = f" (in {part.whole!r})" if simple != part.whole else ""
                messages.append(f"{simple!r}{of} matches no pattern of commands_allowed")
    return _capped("commands_allowed", messages, "commands")


def _commands_forbidden(patterns: tuple[str, ...], parts: dict[str, CommandParts]) -> list[Failure]:
    messages = []
    for part in parts.values():
        for pattern in patterns:
            if command_matches(pattern, part.whole):
                messages.append(f"{part.whole!r} matches the forbidden pattern {pattern!r}")
                continue
            hit = next((simple for simple in part.simple if command_matches(pattern, simple)), None)
            if hit is not None:
                messages.append(f"{hit!r} (in {part.whole!r}) matches the forbidden pattern {pattern!r}")
    return _capped("commands_forbidden", messages, "commands")


# --- output_matches ---------------------------------------------------------------------------


def _output_matches(regexes: tuple[str, ...], evidence: Evidence) -> list[Failure]:
    if not regexes:
        return []
    failures = []
    texts = [evidence.final_answer, *evidence.results.values()]
    where = f"the final answer or the {len(evidence.results)} result files"
    for regex, found in zip(regexes, _search(regexes, texts), strict=True):
        if isinstance(found, str):  # parse_expect refuses these; a stale record may still hold one
            failures.append(Failure("output_matches", f"{regex!r} is not a regular expression: {found}"))
        elif found is None:
            failures.append(
                Failure(
                    "output_matches",
                    f"{regex!r} took longer than {REGEX_SECONDS:g}s over {where}: simplify the regex",
                )
            )
        elif not found:
            failures.append(Failure("output_matches", f"no match for {regex!r} in {where}"))
    return failures


def _search(regexes: tuple[str, ...], texts: list[str]) -> list[bool | str | None]:
    """Whether each regex is found in one of `texts` (True/False), why it does not compile (a
    text), or None when its time (REGEX_SECONDS each) ran out. In a forked child, as the coding
    tools' grep: Python's regex engine cannot be interrupted, and a pattern such as `(a+)+$`
    over a result file would otherwise hold the worker for good. A regex that runs out of time
    is given up and the child started again for the ones after it."""
    answers: list[bool | str | None] = []
    while len(answers) < len(regexes):
        answers += _search_some(regexes[len(answers) :], texts)
        if len(answers) < len(regexes):
            answers.append(None)  # the one the child was on when its time ran out
    return answers


def _search_some(regexes: tuple[str, ...], texts: list[str]) -> list[bool | str]:
    answers: list[bool | str] = []
    with Child(_search_in_child, regexes, texts) as child:
        try:
            while len(answers) < len(regexes) and child.receive.poll(REGEX_SECONDS):
                answers.append(child.receive.recv())
        except EOFError:
            pass  # the child died: the regex it was on counts as out of time
    return answers


def _search_in_child(regexes: tuple[str, ...], texts: list[str], send) -> None:
    for regex in regexes:
        try:
            compiled = re.compile(regex, re.MULTILINE)
        except (re.error, RecursionError, OverflowError, ValueError) as exc:
            send.send(str(exc))
            continue
        send.send(any(compiled.search(text) for text in texts))
    send.close()


def _capped(assertion: str, messages: list[str], what: str) -> list[Failure]:
    failures = [Failure(assertion, message) for message in messages[:MAX_NAMED]]
    if len(messages) > MAX_NAMED:
        failures.append(Failure(assertion, f"and {len(messages) - MAX_NAMED} more {what}"))
    return failures
