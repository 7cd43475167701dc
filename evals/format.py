"""Eval cases in rysh's format, read from a tree of files (pure: no Django, no git).

A case is a folder `<recipe folder>/<name>/evals/<case>/` (rysh packages: `<package>/evals/<case>/`):
- `task.md`: the body is the task; optional front matter `until:` (the goal, when set) and
  `args:` (a mapping of the recipe's placeholders to values);
- `expect.yaml`: rysh's five assertions `files_changed`, `commands_allowed`,
  `commands_forbidden`, `output_matches`, `max_tokens`;
- `judge.md` (optional): a rubric; empty is an error (delete it or write a rubric);
- `files/` (optional): the tree a `workdir:` recipe's working copy starts from.
A folder without `task.md` or `expect.yaml` is a broken case, listed with its error.

The YAML is read with the recipe reader's nodes-with-lines (catalogue/recipe/reader.py), so a
mistake is named at its file and line exactly as a recipe's is (docs/evals.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from catalogue.recipe.reader import NULL_TAG, Reader, RecipeError, RecipeIssue, split_frontmatter

EXPECT_KEYS = ("files_changed", "commands_allowed", "commands_forbidden", "output_matches", "max_tokens")
TASK_KEYS = ("until", "args")
CASE_FILES = ("task.md", "expect.yaml", "judge.md")
FILES_DIR = "files"
# task.md, expect.yaml and judge.md are pages of text, capped like a recipe is
MAX_TEXT_BYTES = 256 * 1024
# the files/ tree a working copy starts from: a small project, not a data set
MAX_FILES_BYTES = 16 * 1024 * 1024
MAX_NAME = 200  # a case's folder name (CaseResult.name)
_ARG_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
    if not recipe_path.endswith(".md") or recipe_path.endswith("/.md"):
        raise ValueError(f"expected a recipe file ending in .md, got {recipe_path!r}")
    return recipe_path[: -len(".md")] + "/evals"


def read_cases(tree: Mapping[str, bytes], folder: str) -> list[Case]:
    """Every case under `folder` (an `evals/` folder) of `tree` (repository-relative path -> bytes),
    sorted by name; broken ones carry their errors. Files directly in `folder` (a README) are
    not cases."""
    prefix = folder.rstrip("/") + "/" if folder.strip("/") else ""
    groups: dict[str, dict[str, bytes]] = {}
    for path, data in tree.items():
        if not path.startswith(prefix):
            continue
        name, slash, inner = path[len(prefix) :].partition("/")
        if slash and name and inner:
            groups.setdefault(name, {})[inner] = data
    return [read_case(name, prefix + name, files) for name, files in sorted(groups.items())]


def read_case(name: str, folder: str, files: Mapping[str, bytes]) -> Case:
    """One case from its files (paths relative to the case's folder)."""
    errors: list[CaseError] = []
    if len(name) > MAX_NAME:
        errors.append(CaseError(folder, 0, "", f"a case's folder name is at most {MAX_NAME} characters"))
    missing = [wanted for wanted in ("task.md", "expect.yaml") if wanted not in files]
    for wanted in missing:
        errors.append(
            CaseError(
                f"{folder}/{wanted}",
                0,
                "",
                "missing: every case needs a task.md (the task) and an expect.yaml (the assertions)",
            )
        )
    body, until, args = "", None, {}
    if (text := _text(files, "task.md", folder, errors)) is not None:
        body, until, args, found = parse_task(text, path=f"{folder}/task.md")
        errors += found
    expect = Expect()
    if (text := _text(files, "expect.yaml", folder, errors)) is not None:
        expect, found = parse_expect(text, path=f"{folder}/expect.yaml")
        errors += found
    rubric = None
    if (text := _text(files, "judge.md", folder, errors)) is not None:
        rubric, found = parse_rubric(text, path=f"{folder}/judge.md")
        errors += found
    tree = _files_tree(files, folder, errors)
    return Case(
        name=name,
        folder=folder,
        task=body,
        until=until,
        args=args,
        expect=expect,
        rubric=rubric,
        files=tree,
        digest=files_digest(files),
        errors=tuple(errors),
    )


def files_digest(files: Mapping[str, bytes]) -> str:
    """sha256 over a case's files (relative path and bytes of each, in path order): the same
    digest for the same files however they were read (git or disk)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        data = files[path]
        digest.update(f"{len(path.encode('utf-8', 'surrogatepass'))}:".encode())
        digest.update(path.encode("utf-8", "surrogatepass"))
        digest.update(f"{len(data)}:".encode())
        digest.update(data)
    return digest.hexdigest()


def version_digest(case: Case, recipe_text: str) -> str:
    """The case's files with the recipe they ran: equal digests are "the same version"."""
    return hashlib.sha256(f"{case.digest}\0".encode() + recipe_text.encode("utf-8", "surrogatepass")).hexdigest()


# --- task.md ----------------------------------------------------------------------------------


def parse_task(text: str, *, path: str) -> tuple[str, str | None, dict[str, str], list[CaseError]]:
    """(body, until, args, errors)."""
    try:
        front = split_frontmatter(text, path)
    except RecipeError as exc:
        return "", None, {}, _converted(exc.issues, TASK_KEYS)
    reader = Reader(path, front.first_line, {"": TASK_KEYS})
    until, args = None, {}
    try:
        keys = reader.top_level(front.yaml) if front.yaml is not None else {}
        if "until" in keys:
            until = reader.text(keys["until"], "until")
        if "args" in keys:
            args = _read_args(reader, keys["args"])
    finally:
        reader.close()
    errors = _converted(reader.issues, TASK_KEYS)
    body = front.body.strip()
    if not body:
        errors.append(
            CaseError(
                path,
                front.body_line,
                "task",
                "the task (the text after the front matter) is empty: write what the agent should do",
            )
        )
    return body, until, args, errors


def _read_args(reader: Reader, node: yaml.Node) -> dict[str, str]:
    if not isinstance(node, yaml.MappingNode):
        reader.expected(node, "args", "a mapping of the recipe's argument names to values (name: value lines)")
        return {}
    args: dict[str, str] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or not _ARG_RE.match(key_node.value):
            reader.expected(key_node, "args", "an argument name of letters, digits and _ (not starting with a digit)")
            continue
        key = key_node.value
        if key in lines:
            reader.add(key_node, f"args.{key}", f"duplicate key {key!r}: it is already set on line {lines[key]}")
            continue
        lines[key] = reader.line(key_node)
        if not isinstance(value_node, yaml.ScalarNode) or value_node.tag == NULL_TAG:
            reader.expected(value_node, f"args.{key}", 'a value (a text or a number; "" for an empty text)')
            continue
        args[key] = value_node.value  # as written: `007` stays 007, `true` stays true
    return args


# --- judge.md ---------------------------------------------------------------------------------


def parse_rubric(text: str, *, path: str) -> tuple[str | None, list[CaseError]]:
    rubric = text.strip()
    if not rubric:
        return None, [CaseError(path, 0, "", "judge.md is empty: delete it or write a rubric")]
    return rubric, []


# --- expect.yaml ------------------------------------------------------------------------------


def parse_expect(text: str, *, path: str) -> tuple[Expect, list[CaseError]]:
    reader = Reader(path, 1, {"": EXPECT_KEYS})
    values: dict = {}
    try:
        keys = reader.top_level(text)
        for key in ("files_changed", "commands_allowed", "commands_forbidden", "output_matches"):
            if key in keys:
                found = _read_list(reader, keys[key], key, _PROBLEMS[key])
                if found is not None:
                    values[key] = found
        if "max_tokens" in keys:
            values["max_tokens"] = reader.whole(keys["max_tokens"], "max_tokens", 1)
    finally:
        reader.close()
    errors = _converted(reader.issues, EXPECT_KEYS)
    if errors:
        return Expect(), errors
    return Expect(**values), []


def _read_list(reader: Reader, node: yaml.Node, field: str, problem) -> tuple[str, ...] | None:
    what = _WHAT[field]
    if not isinstance(node, yaml.SequenceNode):
        empty = " ([] for none)" if field in ("files_changed", "commands_allowed") else ""
        reader.expected(node, field, f"a list of {what}{empty}")
        return None
    items: list[str] = []
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode) or item.tag == NULL_TAG:
            reader.expected(item, field, f"one of {what}, as a text")
            continue
        if (why := problem(item.value)) is not None:
            reader.add(item, field, f"{item.value!r}: {why}")
            continue
        items.append(item.value)
    return tuple(items)


def glob_problem(pattern: str) -> str | None:
    """Why a `files_changed` glob cannot match a changed file's path (None: it can). Paths are
    as git names them: relative to the working copy's root, `/`-separated, no `.` or `..`."""
    if not pattern:
        return "an empty glob matches no path"
    if "\0" in pattern:
        return "a NUL character is in no path"
    if pattern.startswith("/"):
        return "globs are relative to the working copy's root: drop the leading /"
    if pattern.endswith("/"):
        return "a changed file is a file, not a folder: write dir/** for everything under it"
    segments = pattern.split("/")
    if "" in segments:
        return "an empty segment (//) is in no path"
    if ".." in segments:
        return "a .. segment is in no path of the working copy"
    if "." in segments:
        return "a . segment is in no path as git names it: drop it"
    return None


def command_problem(pattern: str) -> str | None:
    if not pattern.strip():
        return "an empty pattern matches no command"
    if "\0" in pattern:
        return "a NUL character is in no command"
    return None


def regex_problem(pattern: str) -> str | None:
    if not pattern:
        return "an empty regular expression matches anything: drop it"
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    except (RecursionError, OverflowError, ValueError) as exc:  # absurdly nested or sized
        return f"not a regular expression: {exc}"
    return None


_PROBLEMS = {
    "files_changed": glob_problem,
    "commands_allowed": command_problem,
    "commands_forbidden": command_problem,
    "output_matches": regex_problem,
}
_WHAT = {
    "files_changed": "path globs",
    "commands_allowed": "command patterns",
    "commands_forbidden": "command patterns",
    "output_matches": "regular expressions",
}


# --- shared -----------------------------------------------------------------------------------


def check_args(case: Case, placeholders: list[str], *, recipe: str) -> list[CaseError]:
    """A case's `args` must name placeholders the recipe has, and give every one it needs."""
    path = f"{case.folder}/task.md"
    has = ", ".join(placeholders) if placeholders else "none"
    errors = [
        CaseError(path, 0, f"args.{name}", f"{recipe} has no argument {name!r} (its arguments: {has})")
        for name in case.args
        if name not in placeholders
    ]
    errors += [
        CaseError(path, 0, "args", f"no value for {recipe}'s argument {name!r}: add `{name}: …` under args:")
        for name in placeholders
        if name not in case.args
    ]
    return errors


def _text(files: Mapping[str, bytes], name: str, folder: str, errors: list[CaseError]) -> str | None:
    """A case file's text (UTF-8; \\r\\n read as \\n, a leading BOM dropped), None when absent or unreadable."""
    data = files.get(name)
    if data is None:
        return None
    path = f"{folder}/{name}"
    if len(data) > MAX_TEXT_BYTES:
        errors.append(CaseError(path, 0, "", f"expected at most {MAX_TEXT_BYTES:,} bytes, got {len(data):,}"))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        errors.append(CaseError(path, 0, "", f"is not UTF-8 text ({exc.reason} at byte {exc.start})"))
        return None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _files_tree(files: Mapping[str, bytes], folder: str, errors: list[CaseError]) -> dict[str, bytes]:
    prefix = FILES_DIR + "/"
    tree = {path[len(prefix) :]: data for path, data in files.items() if path.startswith(prefix)}
    size = sum(len(data) for data in tree.values())
    if size > MAX_FILES_BYTES:
        errors.append(
            CaseError(
                f"{folder}/{FILES_DIR}",
                0,
                "",
                f"expected at most {MAX_FILES_BYTES:,} bytes in all, got {size:,}: a case starts from a small project",
            )
        )
    return dict(sorted(tree.items()))


def _converted(issues, known: tuple[str, ...]) -> list[CaseError]:
    """The recipe reader's issues as a case's: an unknown key names every key the file knows."""
    errors = []
    for issue in sorted(issues, key=lambda i: (i.line or 0, i.column or 0)):
        issue: RecipeIssue
        message = issue.message
        if message.startswith("unknown key"):
            message += f"; expected one of {', '.join(known)}"
        field = "" if issue.field == "frontmatter" else issue.field
        errors.append(CaseError(issue.path, issue.line or 0, field, message))
    return errors
