"""Recipe files: markdown with YAML frontmatter -> a validated RecipeSpec (SPEC §1–§4).

A recipe lives at `.rysh/automations/<webs|tasks>/<name>.md`. The frontmatter is the
control envelope, the body is the task prompt; a file without frontmatter is all prompt.

Messages: every refusal is a RecipeIssue printed as

    halilagin-medium.md:14 loop.do.budget.watch.takeover_when: expected a whole number from 10 to 99, got 5

The file is named by its basename (the `path` argument's last segment, whatever
directory it was given with), lines are 1-based lines of the whole file (not of the
frontmatter), and the field is the full dotted path of the key. All the issues of a
file are collected and raised together in one RecipeError; parse_recipe raises
nothing else for any input text.

Pure: stdlib + PyYAML, no Django, no I/O except load_recipe and resolve_output_dir.
"""
from __future__ import annotations

import difflib
import functools
import os
import pathlib
import posixpath
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import yaml

from catalogue.spec import FOLDERS, KINDS, MAX_INTERVAL, DoSpec, RecipeSpec, WhileSpec
from budgets.units import UnitError, parse_duration, parse_tokens

NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")

# --- the schema: which keys exist where -------------------------------------------------

_TOP_KEYS = (
    "description", "kind", "web_profile", "url", "web_read", "record", "args", "output_dir",
    "schedule", "loop", "step", "approve", "allowed_domains", "model", "judge_model",
)
_WEB_ONLY = ("web_profile", "url", "web_read", "record", "allowed_domains")
_LOOP_KEYS = ("do", "while")
_DO_KEYS = ("interval", "max_iterations", "max_duration", "auto_continue", "budget", "model")
_DO_BUDGET_KEYS = ("size", "watch")
_WATCH_KEYS = ("takeover_when", "takeover_prompt")
_WHILE_KEYS = ("enabled", "max_iterations", "max_duration", "budget", "prompts", "judge_model")
_WHILE_BUDGET_KEYS = ("size",)
_PROMPTS_KEYS = ("until", "iterate_with")

# Where each mapping sits, so a key put at the wrong level can be pointed home
# (`until:` directly under `loop.while` is the classic slip). Legacy `step` is left out
# on purpose: nobody should be sent there.
_HOMES = {
    "": _TOP_KEYS,
    "loop": _LOOP_KEYS,
    "loop.do": _DO_KEYS,
    "loop.do.budget": _DO_BUDGET_KEYS,
    "loop.do.budget.watch": _WATCH_KEYS,
    "loop.while": _WHILE_KEYS,
    "loop.while.budget": _WHILE_BUDGET_KEYS,
    "loop.while.prompts": _PROMPTS_KEYS,
}

_ARG_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_POSITIONAL_RE = re.compile(r"arg([1-9][0-9]{0,5})\Z")  # bounded: int() of huge digit runs fails
_BUILTIN_PLACEHOLDERS = ("args", "output_dir", "results_dir")
_HOST_RE = re.compile(
    r"(\*\.)?(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\Z", re.IGNORECASE
)
# a web address, or a path on this dashboard's own site (RYSH_SITE_URL), such as /demo-site/
_URL_RE = re.compile(r"(https?://\S+|/(?!/)\S*)\Z", re.IGNORECASE)
_CRON_FIELD_RE = re.compile(r"[0-9A-Za-z*/,\-]+\Z")
_SCHEDULE_MACROS = ("@hourly", "@daily", "@weekly", "@monthly")
_SCHEDULE_EXPECTED = (
    'off, @hourly, @daily, @weekly, @monthly, "@every <duration>" '
    'or 5 cron fields such as "0 7 * * *"'
)
_NAME_EXPECTED = "lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"

# PyYAML's wording for values that start with a YAML indicator is cryptic; say what to do.
_YAML_HINTS = (
    ("found character '@'", 'quote values that start with @, e.g. schedule: "@daily"'),
    ("found character '`'", "quote values that start with `"),
    ("while scanning an alias", 'quote values that start with *, e.g. schedule: "* * * * *"'),
)

_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_BAD = object()  # a value that could not be read; its issue is already recorded

# What PyYAML's constructors can raise on hostile input (bad dates, recursive
# aliases, too many digits); each becomes an issue instead of escaping.
_CONSTRUCT_ERRORS = (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError)


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


# --- public API -----------------------------------------------------------------------------


def parse_recipe(
    text: str, *, path: str | os.PathLike, kind: str | None = None, name: str | None = None
) -> RecipeSpec:
    """Validate one recipe's text and return its RecipeSpec, or raise RecipeError.

    `path` is used to name the file in messages (its basename), to take the name
    from (its stem, unless `name` is given) and to find the kind from the folder
    (`.rysh/automations/webs|tasks/`). `kind` is what the CLI asked for (`web`/`task`).
    """
    path = os.fspath(path)
    label = os.path.basename(path) or path
    front = _split_frontmatter(text, label)
    reader = _Reader(label, front.first_line)
    try:
        keys = reader.top_level(front.yaml) if front.yaml is not None else {}
        fields = _read_recipe(reader, keys, path, kind, name)
    finally:
        reader.close()
    prompt = front.body.strip()
    if not prompt:
        reader.add_at(
            front.body_line, "prompt",
            "the task prompt (the text after the frontmatter) is empty: "
            "write what the agent should do",
        )
    if reader.issues:
        raise RecipeError(sorted(reader.issues, key=lambda i: (i.line or 0, i.column or 0)))
    return RecipeSpec(path=path, prompt=prompt, **fields)


def load_recipe(path: str | os.PathLike, *, kind: str | None = None) -> RecipeSpec:
    """Read a recipe file (UTF-8) and parse it; unreadable files are a RecipeError too."""
    label = os.path.basename(os.fspath(path))
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RecipeError([RecipeIssue(
            label, None, "file", f"is not UTF-8 text ({exc.reason} at byte {exc.start})"
        )]) from None
    except OSError as exc:
        raise RecipeError([RecipeIssue(
            label, None, "file", f"cannot be read: {exc.strerror or exc}"
        )]) from None
    return parse_recipe(text, path=path, kind=kind)


_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def placeholders(text: str) -> list[str]:
    """Names used as `{{ name }}` in `text`, each once, in order of first use."""
    return list(dict.fromkeys(_PLACEHOLDER_RE.findall(text)))


def render(template: str, *, spec: RecipeSpec, args: Sequence[str], output_dir: str) -> str:
    """Fill the placeholders of SPEC §1; a missing argument becomes "".

    Unknown names are left exactly as written. One pass only: an argument whose
    value itself contains `{{...}}` is not expanded again.
    """
    args = list(args)

    def fill(match: re.Match[str]) -> str:
        value = _fill(match[1], spec, args, output_dir)
        return match[0] if value is None else value

    return _PLACEHOLDER_RE.sub(fill, template)


def unfilled_placeholders(spec: RecipeSpec, args: Sequence[str] | None) -> list[str]:
    """Warnings for `check`: placeholders nothing fills, and (given args) missing arguments."""
    texts = (
        ("prompt", spec.prompt),
        ("takeover_prompt", spec.do.takeover_prompt),
        ("until", spec.loop_while.until),
        ("iterate_with", spec.loop_while.iterate_with),
    )
    warnings = []
    for where, text in texts:
        for name in placeholders(text or ""):
            if not _is_known(name, spec):
                warnings.append(f"{{{{{name}}}}} in {where} is not a known placeholder: "
                                "nothing fills it")
            elif args is not None and _is_missing(name, spec, args):
                warnings.append(f'{{{{{name}}}}} in {where}: no argument given, it becomes ""')
    return warnings


def resolve_output_dir(spec: RecipeSpec, results_root: str | os.PathLike) -> pathlib.Path:
    """The real (symlink-free) output folder, refused unless it is inside the results root."""
    relative = spec.output_dir or _default_output_dir(spec.kind, spec.name)
    label = os.path.basename(spec.path) or spec.path

    def refuse(message: str) -> RecipeError:
        return RecipeError([RecipeIssue(label, None, "output_dir", message)])

    try:
        root = os.path.realpath(results_root)
        lexical = os.path.normpath(os.path.join(root, relative))
        target = os.path.realpath(lexical)
    except (OSError, ValueError) as exc:
        raise refuse(f"{relative!r} cannot be resolved: {exc}") from None
    if _inside(target, root):
        return pathlib.Path(target)
    how = " through a symbolic link" if _inside(lexical, root) else ""
    raise refuse(f"{relative!r} leads{how} to {target}, outside the results root {root}: "
                 "output_dir must stay inside it")


# --- frontmatter ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Front:
    yaml: str | None  # the frontmatter's YAML, None when the file has none
    first_line: int  # file line of the YAML's first line
    body: str
    body_line: int  # file line where the body (the prompt) starts


def _split_frontmatter(text: str, label: str) -> _Front:
    # Lines are split on "\n" only, so file line numbers match what an editor shows.
    text = text.removeprefix("\ufeff")  # editors on Windows like to add one
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return _Front(None, 1, text, 1)
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            yaml_text = "\n".join(lines[1:index]) + "\n"
            return _Front(yaml_text, 2, "\n".join(lines[index + 1:]), index + 2)
    raise RecipeError([RecipeIssue(
        label, 1, "frontmatter",
        "the frontmatter opened on line 1 is never closed: end it with a line that is exactly ---",
    )])


# --- reading YAML nodes with their lines ----------------------------------------------------


class _Reader:
    """Walks composed YAML nodes, converts values and collects issues with file lines."""

    def __init__(self, label: str, first_line: int):
        self.label = label
        self.first_line = first_line
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
        return self.mapping(root, "", _TOP_KEYS) or {}

    def _yaml_error(self, exc: yaml.YAMLError, text: str) -> None:
        if isinstance(exc, yaml.reader.ReaderError):
            line = text[: exc.position].count("\n")
            char = chr(exc.character) if isinstance(exc.character, int) else exc.character
            self.add_at(self.first_line + line, "frontmatter",
                        f"invalid YAML: character {char!r} is not allowed ({exc.reason})")
            return
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        message = f"invalid YAML: {problem}"
        if context:
            message += f" ({context})"
        for needle, hint in _YAML_HINTS:
            if needle in message:
                message += f"; {hint}"
                break
        if mark is None:
            self.add_at(self.first_line, "frontmatter", message)
            return
        # End-of-stream errors point one past the YAML; keep them on its last line.
        line = min(self.first_line + mark.line, self.last_line)
        self.add_at(line, "frontmatter", message, column=mark.column + 1)

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
                self.add(key_node, _join(field, key), _unknown_key(key, field, known))
        return found

    def _check_duplicates(self, node: yaml.MappingNode, field: str) -> None:
        first_seen: dict[str, yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = key_node.value
            if key in first_seen:
                self.add(key_node, _join(field, key),
                         f"duplicate key {key!r}: it is already set on line "
                         f"{self.line(first_seen[key])}")
            else:
                first_seen[key] = key_node

    def _key(self, node: yaml.Node, field: str) -> str | None:
        if isinstance(node, yaml.ScalarNode):
            return node.value
        self.expected(node, field or "frontmatter", "a key name")
        return None

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
            return _BAD

    def whole(self, node, field, low: int, high: int | None = None) -> int | None:
        value = self.value(node, field)
        # type() rather than isinstance(): YAML true is a Python int, and not a number here.
        if type(value) is int and value >= low and (high is None or value <= high):
            return value
        if value is not _BAD:
            want = f"from {low} to {high}" if high is not None else f"of at least {low}"
            self.expected(node, field, f"a whole number {want}")
        return None

    def boolean(self, node, field) -> bool | None:
        value = self.value(node, field)
        # YAML 1.1 also reads yes/no/on/off as booleans; only true/false are accepted.
        if isinstance(value, bool) and node.value.lower() in ("true", "false"):
            return value
        if value is not _BAD:
            self.expected(node, field, "true or false")
        return None

    def text(self, node, field) -> str | None:
        value = self.value(node, field)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if value is not _BAD:
            self.expected(node, field, "a non-empty text")
        return None

    def choice(self, node, field, options: Sequence[str]) -> str | None:
        value = self.value(node, field)
        if isinstance(value, str) and value in options:
            return value
        if value is not _BAD:
            self.expected(node, field, " or ".join(options))
        return None

    def matching(self, node, field, pattern: re.Pattern, what: str) -> str | None:
        value = self.value(node, field)
        if isinstance(value, str) and pattern.match(value):
            return value
        if value is not _BAD:
            self.expected(node, field, what)
        return None

    def units(self, node, field, parse: Callable[[object], int]) -> int | None:
        value = self.value(node, field)
        if value is _BAD:
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


def _shown(node: yaml.Node) -> str:
    """The offending value as written in the YAML, short."""
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if node.tag == _NULL_TAG:
        return "nothing"
    text = repr(node.value) if node.tag == _STR_TAG else node.value
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(exc: BaseException) -> str:
    return getattr(exc, "problem", None) or str(exc).split("\n", 1)[0] or type(exc).__name__


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _unknown_key(key: str, field: str, known: Sequence[str]) -> str:
    message = f"unknown key {key!r}"
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f"{message} (did you mean {close[0]!r}?)"
    homes = [home or "the top level" for home, keys in _HOMES.items()
             if key in keys and home != field]
    if homes:
        return f"{message} (it belongs under {' or '.join(homes)})"
    return message


# --- the recipe's fields --------------------------------------------------------------------


def _read_recipe(r: _Reader, keys: dict, path: str, kind_arg: str | None,
                 name_arg: str | None) -> dict:
    """RecipeSpec keyword arguments (all but path and prompt); issues go to `r`."""
    kind = _resolve_kind(r, path, kind_arg, keys.get("kind"))
    name = _resolve_name(r, path, name_arg)
    if kind == "task":
        for key in _WEB_ONLY:
            if key in keys:
                r.add(keys[key], key, "applies to web recipes only (this is a task recipe)")
        keys = {key: node for key, node in keys.items() if key not in _WEB_ONLY}
    values = r.read_keys(keys, "", {
        "description": r.text,
        "web_profile": functools.partial(r.matching, pattern=NAME_RE,
                                         what=f"a browser profile name ({_NAME_EXPECTED})"),
        "url": functools.partial(r.matching, pattern=_URL_RE,
                                 what="a web address starting with http:// or https:// "
                                      "(or a path on this dashboard, starting with /)"),
        "web_read": functools.partial(r.choice, options=("text", "screenshot")),
        "record": r.boolean,
        "args": functools.partial(_read_arg_names, r),
        "output_dir": functools.partial(_read_output_dir, r),
        "schedule": functools.partial(_read_schedule, r),
        "approve": functools.partial(_read_tool_names, r),
        "allowed_domains": functools.partial(_read_domains, r),
        "model": r.text,
        "judge_model": r.text,
    })
    do, loop_while, warnings = _read_loop(r, keys)
    if kind is not None and name is not None:
        values.setdefault("output_dir", _default_output_dir(kind, name))
    return {**values, "kind": kind, "name": name, "do": do, "loop_while": loop_while,
            "warnings": tuple(warnings)}


def _resolve_kind(r: _Reader, path: str, kind_arg: str | None,
                  node: yaml.Node | None) -> str | None:
    claims: list[tuple[str, str]] = []  # (kind, who says so)
    refused = False
    if kind_arg is not None:
        kind = KINDS.get(kind_arg, kind_arg)
        if kind in FOLDERS:
            claims.append((kind, f"the command asks for a {kind} recipe"))
        else:
            r.add(None, "kind", f"expected web or task, got {kind_arg!r}")
            refused = True
    folder = _automation_folder(path)
    if folder is not None:
        claims.append((KINDS[folder], f"the file is under .rysh/automations/{folder}"))
    if node is not None:
        kind = r.choice(node, "kind", ("web", "task"))
        if kind is None:
            refused = True
        else:
            claims.append((kind, f"the file says kind: {kind}"))
    kinds = {kind for kind, _ in claims}
    if len(kinds) > 1:
        r.add(node, "kind", "the kinds disagree: " + "; ".join(who for _, who in claims))
        return None
    if not kinds and not refused and not r.broken:
        r.add(None, "kind", "cannot tell the kind: put the file under .rysh/automations/webs "
                            "or tasks, or set kind: web|task")
    return kinds.pop() if kinds else None


def _automation_folder(path: str) -> str | None:
    """`webs`/`tasks` when the path runs through `.rysh/automations/<folder>/`."""
    parts = pathlib.PurePath(path).parts
    for index in range(len(parts) - 3):
        if parts[index: index + 2] == (".rysh", "automations") and parts[index + 2] in KINDS:
            return parts[index + 2]
    return None


def _resolve_name(r: _Reader, path: str, name_arg: str | None) -> str | None:
    name = name_arg if name_arg is not None else pathlib.PurePath(path).stem
    if NAME_RE.match(name):
        return name
    fix = "" if name_arg is not None else "; rename the file"
    r.add(None, "name", f"expected a recipe name of {_NAME_EXPECTED}, got {name!r}{fix}")
    return None


def _default_output_dir(kind: str, name: str) -> str:
    return f"{FOLDERS[kind]}/{name}/results"


def _read_arg_names(r: _Reader, node, field) -> tuple[str, ...] | None:
    items = r.items(node, field, "argument names")
    if items is None:
        return None
    names: list[str] = []
    for item, value in items:
        if value is _BAD:
            continue
        if not isinstance(value, str) or not _ARG_RE.match(value):
            r.expected(item, field, "an argument name of letters, digits and _ "
                                    "(not starting with a digit)")
        elif value in _BUILTIN_PLACEHOLDERS or re.fullmatch(r"arg[0-9]+", value):
            r.add(item, field, f"{value!r} is a built-in placeholder: pick another name")
        elif value in names:
            r.add(item, field, f"argument {value!r} is listed twice")
        else:
            names.append(value)
    return tuple(names)


def _read_tool_names(r: _Reader, node, field) -> tuple[str, ...] | None:
    items = r.items(node, field, "tool names")
    if items is None:
        return None
    names = []
    for item, value in items:
        if isinstance(value, str) and value.strip():
            names.append(value.strip())
        elif value is not _BAD:
            r.expected(item, field, "a tool name")
    return tuple(names)


def _read_domains(r: _Reader, node, field) -> tuple[str, ...] | None:
    """Host names, stored lowercased (hosts are case-insensitive)."""
    items = r.items(node, field, "host names")
    if items is None:
        return None
    hosts = []
    for item, value in items:
        if isinstance(value, str) and _HOST_RE.match(value):
            hosts.append(value.lower())
        elif value is not _BAD:
            r.expected(item, field, "a host name such as example.com or *.example.com")
    return tuple(hosts)


def _read_output_dir(r: _Reader, node, field) -> str | None:
    """A relative path that stays inside the results root, normalised with '/'."""
    value = r.text(node, field)
    if value is None:
        return None
    # Backslashes count as separators so `..\\x` cannot slip past on any platform.
    normal = posixpath.normpath(value.replace("\\", "/"))
    if "\x00" in value:
        r.expected(node, field, "a folder path without NUL characters")
    elif normal.startswith("/") or re.match(r"[A-Za-z]:", value):
        r.add(node, field, f"expected a folder relative to the results root, got {value!r} "
                           "(an absolute path)")
    elif normal == ".." or normal.startswith("../"):
        r.add(node, field, f"{value!r} climbs out of the results root with '..': "
                           "output_dir must stay inside it")
    else:
        return normal
    return None


def _read_schedule(r: _Reader, node, field) -> str | None:
    if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL_TAG:
        r.expected(node, field, _SCHEDULE_EXPECTED)
        return None
    # The raw text, not the YAML value: YAML reads a bare `off` as false.
    text = " ".join(node.value.split())
    lowered = text.lower()
    if lowered in ("off", "none"):
        return "off"
    if lowered in _SCHEDULE_MACROS:
        return lowered
    if lowered.startswith("@every"):
        duration = text[len("@every"):].strip()
        try:
            parse_duration(duration)
        except UnitError as exc:
            r.add(node, field, f"@every needs a duration: {exc}")
            return None
        return f"@every {duration}"
    fields = text.split(" ")
    if len(fields) == 5 and all(_CRON_FIELD_RE.match(part) for part in fields):
        return text
    r.expected(node, field, _SCHEDULE_EXPECTED)
    return None


# --- the loop -------------------------------------------------------------------------------


def _read_loop(r: _Reader, keys: dict) -> tuple[DoSpec, WhileSpec, list[str]]:
    loop = (r.mapping(keys["loop"], "loop", _LOOP_KEYS) if "loop" in keys else None) or {}
    do = _read_do(r, loop["do"], "loop.do") if "do" in loop else DoSpec()
    warnings = []
    if "step" in keys:
        # Legacy `step` is still validated: garbage in the file is an error even if unused.
        legacy = _read_do(r, keys["step"], "step")
        if "do" in loop:
            warnings.append("step is ignored: loop.do is present")
        else:
            do = legacy
    loop_while = _read_while(r, loop["while"], "loop.while") if "while" in loop else WhileSpec()
    return do, loop_while, warnings


def _read_do(r: _Reader, node, field: str) -> DoSpec:
    keys = r.mapping(node, field, _DO_KEYS)
    if keys is None:
        return DoSpec()
    values = r.read_keys(keys, field, {
        "interval": functools.partial(r.whole, low=1, high=MAX_INTERVAL),
        "max_iterations": functools.partial(r.whole, low=1),
        "max_duration": r.duration,
        "auto_continue": r.boolean,
        "model": r.text,
    })
    if "budget" in keys:
        values.update(_read_do_budget(r, keys["budget"], f"{field}.budget"))
    return DoSpec(**values)


def _read_do_budget(r: _Reader, node, field: str) -> dict:
    """DoSpec keywords from `budget:` — a mapping, or just a size (`budget: 4b`) like while's."""
    if isinstance(node, yaml.ScalarNode):
        size = r.tokens(node, field)
        return {} if size is None else {"budget_size": size}
    keys = r.mapping(node, field, _DO_BUDGET_KEYS)
    if keys is None:
        return {}
    values = {}
    if "size" in keys and (size := r.tokens(keys["size"], f"{field}.size")) is not None:
        values["budget_size"] = size
    if "watch" in keys and (watch := r.mapping(keys["watch"], f"{field}.watch", _WATCH_KEYS)):
        values.update(r.read_keys(watch, f"{field}.watch", {
            "takeover_when": functools.partial(r.whole, low=10, high=99),
            "takeover_prompt": r.text,
        }))
    return values


def _read_while(r: _Reader, node, field: str) -> WhileSpec:
    keys = r.mapping(node, field, _WHILE_KEYS)
    if keys is None:
        return WhileSpec()
    values = r.read_keys(keys, field, {
        "enabled": r.boolean,
        "max_iterations": functools.partial(r.whole, low=1),
        "max_duration": r.duration,
        "budget": functools.partial(_read_while_budget, r),
        "judge_model": r.text,
    })
    if "prompts" in keys and (prompts := r.mapping(keys["prompts"], f"{field}.prompts",
                                                   _PROMPTS_KEYS)):
        values.update(r.read_keys(prompts, f"{field}.prompts",
                                  {"until": r.text, "iterate_with": r.text}))
    return WhileSpec(**values)


def _read_while_budget(r: _Reader, node, field: str) -> int | None:
    """`budget: 20b` or `budget: {size: 20b}`."""
    if isinstance(node, yaml.ScalarNode):
        return r.tokens(node, field)
    keys = r.mapping(node, field, _WHILE_BUDGET_KEYS)
    if keys and "size" in keys:
        return r.tokens(keys["size"], f"{field}.size")
    return None


# --- placeholders ---------------------------------------------------------------------------


def _arg_index(name: str, spec: RecipeSpec) -> int | None:
    """Position of an argument placeholder (`arg2` -> 1, a named arg -> its place)."""
    positional = _POSITIONAL_RE.match(name)
    if positional:
        return int(positional[1]) - 1
    if name in spec.args:
        return spec.args.index(name)
    return None


def _fill(name: str, spec: RecipeSpec, args: list[str], output_dir: str) -> str | None:
    if name == "args":
        return " ".join(args)
    if name in ("output_dir", "results_dir"):
        return output_dir
    index = _arg_index(name, spec)
    if index is None:
        return None
    return args[index] if index < len(args) else ""


def _is_known(name: str, spec: RecipeSpec) -> bool:
    return name in _BUILTIN_PLACEHOLDERS or _arg_index(name, spec) is not None


def _is_missing(name: str, spec: RecipeSpec, args: Sequence[str]) -> bool:
    if name == "args":
        return not args
    index = _arg_index(name, spec)
    return index is not None and index >= len(args)


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root
