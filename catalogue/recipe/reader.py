"""Reading a recipe file: the frontmatter split, YAML nodes with their file lines, and the
issues found along the way (docs/recipes.md).

Lines are 1-based lines of the whole file (not of the frontmatter); a field is the full
dotted path of a key. The reader knows no recipe field: `fields.py` says which keys exist
where and what each value must be; here a value is converted and every refusal recorded.

Pure: stdlib + PyYAML, no Django, no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import yaml

from budgets.units import UnitError, parse_duration, parse_tokens

NULL_TAG = "tag:yaml.org,2002:null"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
BAD = object()  # a value that could not be read; its issue is already recorded

# What PyYAML's constructors can raise on hostile input (bad dates, recursive
# aliases, too many digits); each becomes an issue instead of escaping.
_CONSTRUCT_ERRORS = (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError)

# PyYAML's wording for values that start with a YAML indicator is cryptic; say what to do.
_YAML_HINTS = (
    ("found character '@'", 'quote values that start with @, e.g. schedule: "@daily"'),
    ("found character '`'", "quote values that start with `"),
    ("while scanning an alias", 'quote values that start with *, e.g. schedule: "* * * * *"'),
    ("found character '\\t' that cannot start any token", "indent with spaces: YAML does not allow tabs there"),
    (
        "but found '<block mapping start>'",
        "bad indentation: line this key up with the keys of the mapping it belongs to",
    ),
    (
        "mapping values are not allowed here",
        "quote a value that contains ': ', or line this key up with the keys of its mapping",
    ),
)
_FLOW_OPENERS = {"while parsing a flow sequence": "[", "while parsing a flow mapping": "{"}


# --- issues -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecipeIssue:
    """One problem in a recipe file, located by file basename, line and dotted field."""

    path: str
    line: int | None
    field: str
    message: str
    column: int | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where} {self.field}: {self.message}"


class RecipeError(ValueError):
    """Every issue found in one recipe; str() prints them one per line."""

    def __init__(self, issues: Sequence[RecipeIssue]):
        self.issues = tuple(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


# --- frontmatter ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Front:
    yaml: str | None  # the frontmatter's YAML, None when the file has none
    first_line: int  # file line of the YAML's first line
    body: str
    body_line: int  # file line where the body (the prompt) starts


def split_frontmatter(text: str, label: str) -> Front:
    # Lines are split on "\n" only, so file line numbers match what an editor shows.
    text = text.removeprefix("\ufeff")  # editors on Windows like to add one
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return Front(None, 1, text, 1)
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            yaml_text = "\n".join(lines[1:index]) + "\n"
            return Front(yaml_text, 2, "\n".join(lines[index + 1 :]), index + 2)
    raise RecipeError(
        [
            RecipeIssue(
                label,
                1,
                "frontmatter",
                "the frontmatter opened on line 1 is never closed: end it with a line that is exactly ---",
            )
        ]
    )


# --- reading YAML nodes with their lines ----------------------------------------------------


class Reader:
    """Walks composed YAML nodes, converts values and collects issues with file lines.

    `homes` is the schema's map of where each mapping sits ("" for the top level,
    "loop.do", ...) to the keys it knows, so a key put at the wrong level can be pointed home.
    """

    def __init__(self, label: str, first_line: int, homes: Mapping[str, Sequence[str]]):
        self.label = label
        self.first_line = first_line
        self.homes = homes
        self.loader: yaml.SafeLoader | None = None
        self.issues: list[RecipeIssue] = []
        self.last_line = first_line
        self.seen: set[int] = set()  # mappings already checked (aliases reach one twice)
        self.broken = False  # the YAML could not be read, so absent keys prove nothing

    def close(self) -> None:
        if self.loader is not None:
            self.loader.dispose()

    # recording

    def add_at(self, line: int | None, field: str, message: str, column: int | None = None):
        self.issues.append(RecipeIssue(self.label, line, field, message, column))

    def add(self, node: yaml.Node | None, field: str, message: str) -> None:
        self.add_at(self.line(node) if node is not None else None, field, message)

    def line(self, node: yaml.Node) -> int:
        return self.first_line + node.start_mark.line

    def expected(self, node: yaml.Node, field: str, what: str) -> None:
        self.add(node, field, f"expected {what}, got {_shown(node)}")

    # the document

    def top_level(self, text: str) -> dict[str, yaml.Node]:
        self.last_line = self.first_line + max(text.count("\n") - 1, 0)
        try:
            self.loader = yaml.SafeLoader(text)
            root = self.loader.get_single_node()
        except yaml.YAMLError as exc:
            self.broken = True
            self._yaml_error(exc, text)
            return {}
        except RecursionError:
            self.broken = True
            self.add_at(self.first_line, "frontmatter", "the YAML is nested too deeply")
            return {}
        if root is None:  # empty frontmatter: all defaults
            return {}
        if not isinstance(root, yaml.MappingNode):
            self.expected(root, "frontmatter", "a mapping of settings (key: value lines)")
            return {}
        return self.mapping(root, "", self.homes[""]) or {}

    def _yaml_error(self, exc: yaml.YAMLError, text: str) -> None:
        if isinstance(exc, yaml.reader.ReaderError):
            row = text[: exc.position].count("\n")
            char = chr(exc.character) if isinstance(exc.character, int) else exc.character
            self.add_at(
                self.first_line + row,
                key_path(text.split("\n"), row) or "frontmatter",
                f"invalid YAML: character {char!r} is not allowed ({exc.reason})",
            )
            return
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        problem_mark = getattr(exc, "problem_mark", None)
        context_mark = getattr(exc, "context_mark", None)
        lines = text.split("\n")
        if context == "while scanning a quoted scalar" and context_mark and "end of stream" in problem:
            # PyYAML gives up at the end of the frontmatter; the mistake is where the quote opens.
            row = context_mark.line
            self.add_at(self.first_line + row, key_path(lines, row) or "frontmatter", "unclosed quoted string")
            return
        message = f"invalid YAML: {problem}"
        if context:
            message += f" ({context})"
        hint = next((hint for needle, hint in _YAML_HINTS if needle in message), None)
        mark = problem_mark or context_mark
        if mark is None:
            self.add_at(self.first_line, "frontmatter", message + (f"; {hint}" if hint else ""))
            return
        # End-of-stream errors point one past the YAML; keep them on its last line.
        row = min(mark.line, self.last_line - self.first_line)
        column = mark.column + 1 if mark.line == row else None
        opened = context_mark.line if context_mark is not None else row
        if (context or "").startswith("while parsing a flow") and opened < row:
            # An unclosed [ or { swallows the lines after it; the mistake is where it opens.
            bracket = _FLOW_OPENERS.get(context, "bracket")
            hint = f"the {bracket} opened on this line is not closed before line {self.first_line + row}"
            row, column = opened, context_mark.column + 1
        if hint:
            message += f"; {hint}"
        self.add_at(self.first_line + row, key_path(lines, row) or "frontmatter", message, column=column)

    # structure

    def mapping(self, node: yaml.Node, field: str, known: Sequence[str]) -> dict | None:
        """Known keys -> value nodes; unknown, duplicate and non-name keys become issues."""
        if not isinstance(node, yaml.MappingNode):
            self.expected(node, field, "a mapping with keys " + ", ".join(known))
            return None
        if id(node) not in self.seen:  # after flattening, merged keys would look duplicated
            self.seen.add(id(node))
            self._check_duplicates(node, field)
        try:  # resolves YAML merge keys (<<: *anchor) in place
            self.loader.flatten_mapping(node)
        except _CONSTRUCT_ERRORS as exc:
            self.add(node, field, f"cannot read this mapping: {_problem(exc)}")
            return None
        found: dict[str, yaml.Node] = {}
        reported: set[str] = set()
        for key_node, value_node in node.value:
            key = self._key(key_node, field)
            if key is None or key in reported:
                continue
            if key in known:
                found[key] = value_node  # last wins, so own keys override merged ones
            else:
                reported.add(key)
                self.add(key_node, _join(field, key), self._unknown_key(key, field, known))
        return found

    def _check_duplicates(self, node: yaml.MappingNode, field: str) -> None:
        first_seen: dict[str, yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = key_node.value
            if key in first_seen:
                self.add(
                    key_node,
                    _join(field, key),
                    f"duplicate key {key!r}: it is already set on line {self.line(first_seen[key])}",
                )
            else:
                first_seen[key] = key_node

    def _key(self, node: yaml.Node, field: str) -> str | None:
        if isinstance(node, yaml.ScalarNode):
            return node.value
        self.expected(node, field or "frontmatter", "a key name")
        return None

    def _unknown_key(self, key: str, field: str, known: Sequence[str]) -> str:
        message = f"unknown key {key!r}"
        # a key of another level is pointed home first: `auto_approve:` at the top level is not `approve:`
        homes = [home or "the top level" for home, keys in self.homes.items() if key in keys and home != field]
        if homes:
            return f"{message} (it belongs under {' or '.join(homes)})"
        close = difflib.get_close_matches(key, known, n=1)
        if close:
            return f"{message} (did you mean {close[0]!r}?)"
        return message

    def read_keys(self, keys: dict, field: str, readers: dict[str, Callable]) -> dict:
        """Run each present key's reader; keep the values that were valid."""
        values = {}
        for key, read in readers.items():
            if key in keys:
                value = read(keys[key], _join(field, key))
                if value is not None:
                    values[key] = value
        return values

    # values

    def value(self, node: yaml.Node, field: str) -> object:
        try:
            return self.loader.construct_object(node, deep=True)
        except _CONSTRUCT_ERRORS as exc:
            self.add(node, field, f"cannot read this value: {_problem(exc)}")
            return BAD

    def whole(self, node, field, low: int, high: int | None = None) -> int | None:
        value = self.value(node, field)
        # type() rather than isinstance(): YAML true is a Python int, and not a number here.
        if type(value) is int and value >= low and (high is None or value <= high):
            return value
        if value is not BAD:
            want = f"from {low} to {high}" if high is not None else f"of at least {low}"
            self.expected(node, field, f"a whole number {want}")
        return None

    def boolean(self, node, field) -> bool | None:
        value = self.value(node, field)
        # YAML 1.1 also reads yes/no/on/off as booleans; only true/false are accepted.
        if isinstance(value, bool) and node.value.lower() in ("true", "false"):
            return value
        if value is not BAD:
            self.expected(node, field, "true or false")
        return None

    def text(self, node, field) -> str | None:
        value = self.value(node, field)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if value is not BAD:
            self.expected(node, field, "a non-empty text")
        return None

    def choice(self, node, field, options: Sequence[str]) -> str | None:
        value = self.value(node, field)
        if isinstance(value, str) and value in options:
            return value
        if value is not BAD:
            self.expected(node, field, " or ".join(options))
        return None

    def matching(self, node, field, pattern: re.Pattern, what: str) -> str | None:
        value = self.value(node, field)
        if isinstance(value, str) and pattern.match(value):
            return value
        if value is not BAD:
            self.expected(node, field, what)
        return None

    def units(self, node, field, parse: Callable[[object], int]) -> int | None:
        value = self.value(node, field)
        if value is BAD:
            return None
        try:
            return parse(value)
        except UnitError as exc:
            self.add(node, field, str(exc))
        return None

    def tokens(self, node, field) -> int | None:
        return self.units(node, field, parse_tokens)

    def duration(self, node, field) -> int | None:
        return self.units(node, field, parse_duration)

    def items(self, node, field, what: str) -> list[tuple[yaml.Node, object]] | None:
        if not isinstance(node, yaml.SequenceNode):
            self.expected(node, field, f"a list of {what}")
            return None
        return [(item, self.value(item, field)) for item in node.value]


# How a line of block YAML starts: its indentation, and list dashes counted as indentation.
_INDENT = re.compile(r"[ \t]*(?:-[ \t]+)*")
_KEY_END = re.compile(r":(?:[ \t]|$)")
_NOT_A_KEY_START = "#[]{},:&*!|>%@`-"


def key_line(line: str) -> tuple[int, str, str] | None:
    """(indent, key, value) of a `key: value` line of block YAML, else None. Read without a
    parser (and without a backtracking pattern: a hostile line stays linear); keys inside flow
    collections are not seen."""
    indent = _INDENT.match(line).end()
    rest = line[indent:]
    if not rest or rest[0] in _NOT_A_KEY_START:
        return None
    if rest[0] in "'\"":
        close = rest.find(rest[0], 1)
        after = rest[close + 1 :].lstrip(" \t") if close > 0 else ""
        if not (after == ":" or after[:2] in (": ", ":\t")):
            return None
        return indent, rest[1:close], after[1:].strip()
    end = _KEY_END.search(rest)
    if end is None or " #" in rest[: end.start()] or "\t#" in rest[: end.start()]:
        return None
    return indent, rest[: end.start()].strip(), rest[end.end() :].strip()


def key_path(lines: Sequence[str], row: int) -> str | None:
    """The dotted field of the key on `lines[row]` (0-based), from the indentation of the
    `key:` lines above it; None when that line holds no key. A best guess for YAML that does
    not parse: the lines above are taken to be indented as their author meant."""
    if not 0 <= row < len(lines) or (target := key_line(lines[row])) is None:
        return None
    parents: list[tuple[int, str]] = []
    block_at = None  # indent of a key whose value is a | or > block: deeper lines are its text
    for line in lines[:row]:
        indent = len(line) - len(line.lstrip(" \t"))
        if block_at is not None and (indent > block_at or not line.strip()):
            continue
        block_at = None
        if (found := key_line(line)) is None:
            continue
        indent, key, value = found
        while parents and parents[-1][0] >= indent:
            parents.pop()
        if not value or value[0] in "#&":  # `key:` alone (or with an anchor) opens a mapping
            parents.append((indent, key))
        elif value[0] in "|>":
            block_at = indent
    keys = [key for at, key in parents if at < target[0]]
    return ".".join([*keys, target[1]])


def _join(field: str, key: str) -> str:
    """`loop.do` + `budget` -> `loop.do.budget`; the top level has no prefix."""
    return f"{field}.{key}" if field else key


def _shown(node: yaml.Node) -> str:
    """The offending value as written in the YAML, short."""
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if node.tag == NULL_TAG:
        return "nothing"
    text = repr(node.value) if node.tag == _STR_TAG else node.value
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(exc: BaseException) -> str:
    return getattr(exc, "problem", None) or str(exc).split("\n", 1)[0] or type(exc).__name__
