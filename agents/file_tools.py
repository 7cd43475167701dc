"""The file tools of a coding recipe (docs/coding-loops.md): file_read, edit, file_write, grep and glob,
confined to the run's working copy.

Every path the model names goes through `FileTools.resolve`: resolved with its symlinks
followed, it must land inside the copy and outside every `.git` in it (the copy's repository
belongs to the engine, which diffs and keeps it, not to the agent). Walks (grep, glob) never
enter a symlinked folder and skip a linked file that leads out or into `.git`, so nothing
outside the copy is read by a side door.

Text or binary: a file is text when it has no NUL byte in its first 8 KB (git's own test) and
is valid UTF-8 throughout. Anything else is binary: file_read says so instead of showing it,
edit refuses it (rewriting decoded text could not keep its bytes), grep skips it.

Every failure goes back to the model as a tool error naming the tool, never as an exception.
Writes go to a temporary file in the same folder, then os.replace: a killed worker never
leaves a torn file, and the file keeps its mode.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agents.ports import ToolResult, Tools
from agents.task_tools import ToolRefused
from budgets.guard import cut_marker

READ_LINES = 2000  # file_read's default limit
LINE_CAP = 2000  # characters of one line file_read shows
MATCH_LINE_CAP = 500  # characters of one matching line grep shows: 200 of them must fit
SNIFF_BYTES = 8192  # where a NUL byte makes a file binary
TEXT_CAP = 32 * 1024 * 1024  # file_read and edit load the whole file: past this, bash (sed, head)
GREP_FILE_CAP = 2 * 1024 * 1024
GREP_MATCHES = 200
GLOB_FILES = 500
GLOB_ALTERNATIVES = 64  # what {a,b}{c,d}... may expand to
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_PATH = {
    "type": "string",
    "description": "relative to the working folder, or absolute inside the working copy",
}
_REPLACEMENT = {
    "old_string": {"type": "string", "description": "the exact text to replace (without file_read's line numbers)"},
    "new_string": {"type": "string", "description": "the text to put in its place"},
    "replace_all": {"type": "boolean", "description": "replace every occurrence (default false: exactly one)"},
}
FILE_TOOLS: list[dict[str, Any]] = [
    {
        "name": "file_read",
        "description": (
            f"Read a text file of the working copy. Lines come numbered like `cat -n` (number, tab, "
            f"line); the numbers are not part of the file. Shows {READ_LINES} lines from `offset` unless "
            f"`limit` says otherwise; a line longer than {LINE_CAP} characters is cut. Binary files are "
            "not shown. For a folder use glob."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "description": "first line to show, 1-based"},
                "limit": {"type": "integer", "minimum": 1, "description": f"how many lines (default {READ_LINES})"},
            },
            "required": ["path"],
        },
    },
    {
        "name": "edit",
        "description": (
            "Replace text in an existing UTF-8 file. old_string must match the file exactly and occur "
            "exactly once unless replace_all is true: include enough surrounding lines to make it unique. "
            "For several changes to one file give `edits` instead, applied in order and all or nothing: "
            "if any of them fails the file is left untouched. To create a file use file_write."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": _PATH,
                **_REPLACEMENT,
                "edits": {
                    "type": "array",
                    "description": "instead of old_string/new_string: several replacements, in order",
                    "items": {
                        "type": "object",
                        "properties": _REPLACEMENT,
                        "required": ["old_string", "new_string"],
                    },
                },
            },
            "required": ["path"],
        },
    },
    {
        "name": "file_write",
        "description": (
            "Create a file, or replace one whole, with `content` (UTF-8 text); missing folders are "
            "created. To change part of an existing file, edit is cheaper."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "grep",
        "description": (
            "Search file contents with a Python regular expression, line by line. Answers "
            f"`path:line: text` for at most {GREP_MATCHES} matching lines. Searches `path` (a file, or a "
            "folder recursively; default the working folder), skipping .git, binary files and files over "
            f"{GREP_FILE_CAP // (1024 * 1024)} MB. `glob` keeps only some files: '*.py' matches file names "
            "at any depth, a pattern with '/' the path relative to `path`."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "a Python regular expression"},
                "path": {**_PATH, "description": "a file or folder (default the working folder)"},
                "glob": {"type": "string", "description": "e.g. '*.py' or 'src/**/*.{ts,tsx}'"},
                "ignore_case": {"type": "boolean"},
            },
            "required": ["pattern"],
        },
    },
    {
        "name": "glob",
        "description": (
            "List the files whose path relative to `path` (default the working folder) matches a glob "
            "pattern: `*` and `?` within a name, `**` across folders, `[abc]`, `{py,md}`. '*.py' matches "
            f"at the top only, '**/*.py' at any depth. Newest first, at most {GLOB_FILES}; .git is skipped."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "e.g. '**/*.py' or 'src/*.{js,ts}'"},
                "path": {**_PATH, "description": "the folder to search (default the working folder)"},
            },
            "required": ["pattern"],
        },
    },
]
_NAMES = {tool["name"] for tool in FILE_TOOLS}
_READERS = {"file_read", "grep", "glob"}  # what they answer is cut to the room left


class FileTools(Tools):
    """The file tools of one run, on its working copy."""

    def __init__(self, root: str | Path, *, start: str | Path | None = None):
        self.root = Path(root).resolve()
        base = Path(start) if start is not None else self.root
        self.start = (base if base.is_absolute() else self.root / base).resolve()
        if not self._within(self.start) or self._in_git(self.start):
            raise ValueError(f"start {start} is not a folder of the working copy {root}")
        self.room_chars: int | None = None  # what the next model call has room for (the engine sets it)

    def specs(self) -> list[dict[str, Any]]:
        return list(FILE_TOOLS)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name not in _NAMES:
            return ToolResult(f"unknown tool {name!r}", is_error=True)
        if not isinstance(arguments, dict):
            return ToolResult(f"{name}: arguments must be an object", is_error=True)
        try:
            result = getattr(self, f"_{name}")(**arguments)
        except TypeError as exc:
            return ToolResult(f"{name}: bad arguments ({exc})", is_error=True)
        except ToolRefused as exc:
            return ToolResult(f"{name}: {exc}", is_error=True)
        except OSError as exc:
            where = f" ({self._name_of(exc.filename)})" if exc.filename else ""
            return ToolResult(f"{name}: {exc.strerror or exc}{where}", is_error=True)
        except Exception as exc:  # a tool call must never crash a pass
            return ToolResult(f"{name}: failed ({type(exc).__name__}: {exc})", is_error=True)
        return self._fit(result) if name in _READERS else result

    # -- confinement --

    def resolve(self, path: object) -> Path:
        """Where a path the model gave really leads, or ToolRefused when that is outside the copy
        or inside a `.git`. Relative paths start at the working folder."""
        text = os.fspath(path) if isinstance(path, os.PathLike) else path
        if not isinstance(text, str) or not text.strip():
            raise ToolRefused("path must be a non-empty text")
        if "\x00" in text:
            raise ToolRefused(f"{text!r} holds a NUL byte")
        try:
            given = Path(text)
            target = (given if given.is_absolute() else self.start / given).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symlink loop
            raise ToolRefused(f"{text!r} cannot be resolved ({exc})") from None
        if os.path.realpath(target) != str(target):
            # a symlink loop stops resolution part way and leaves the rest unresolved
            # (`loop/../etc` with etc a link out): refuse rather than trust a half-resolved path
            raise ToolRefused(f"{text!r} cannot be resolved (a symbolic link loop)")
        if not self._within(target):
            raise ToolRefused(f"{text!r} is outside the working copy")
        if self._in_git(target):
            raise ToolRefused(f"{text!r} is inside .git, the copy's git directory, which the file tools never touch")
        return target

    def shown(self, target: Path) -> str:
        """A path as the model sees it, relative to the working folder (`../README.md` above it):
        what it shows, the model can give back."""
        if self._within(target, self.start):
            return target.relative_to(self.start).as_posix()
        return Path(os.path.relpath(target, self.start)).as_posix()

    def _within(self, target: Path, folder: Path | None = None) -> bool:
        folder = self.root if folder is None else folder
        return target == folder or folder in target.parents

    def _in_git(self, target: Path) -> bool:
        # any depth and any case: a submodule's .git too, and .GIT on a case-insensitive disk
        return any(part.lower() == ".git" for part in target.relative_to(self.root).parts)

    def _name_of(self, filename: object) -> str:
        """An OS error's file, without the server's folders."""
        target = Path(os.fsdecode(filename)) if isinstance(filename, (str, bytes, os.PathLike)) else None
        if target is not None and self._within(target):
            return self.shown(target)
        return target.name if target is not None else str(filename)

    def _fit(self, result: ToolResult) -> ToolResult:
        text = result.content
        if result.is_error or self.room_chars is None or len(text) <= self.room_chars:
            return result
        room = max(self.room_chars, 0)
        return ToolResult(text[:room] + "\n" + cut_marker(len(text), room))

    def _file(self, path: object, *, must_exist: bool = True, missing: str = "glob lists the files") -> Path:
        """A confined path that is no folder (and, unless told otherwise, exists)."""
        target = self.resolve(path)
        if target.is_dir():
            raise ToolRefused(f"{path!r} is a folder: use glob to list its files")
        if must_exist and not target.exists():
            raise ToolRefused(f"no such file {path!r}: {missing}")
        return target

    # -- the tools --

    def _file_read(self, path: str, offset: int = 1, limit: int = READ_LINES) -> ToolResult:
        first, count = _positive(offset, "offset"), _positive(limit, "limit")
        target = self._file(path)
        data = _read_regular(target, path, TEXT_CAP)
        text = decoded(data)
        if text is None:
            raise ToolRefused(f"{path!r}: binary file, {len(data)} bytes: not shown")
        lines = split_lines(text)
        name, total = self.shown(target), len(lines)
        if not lines:
            return ToolResult(f"[{name}: empty file]")
        if first > total:
            raise ToolRefused(f"offset {first} is past the end: {name} has {total} lines")
        last = min(first + count - 1, total)
        notes = []
        if first > 1 or last < total:
            more = f"; offset={last + 1} reads on" if last < total else ""
            notes.append(f"lines {first}-{last} of {total}{more}")
        if "\r\n" in text:
            notes.append("CRLF line endings (not shown)")
        shown_lines = (_cut(line.removesuffix("\r"), LINE_CAP) for line in lines[first - 1 : last])
        body = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(shown_lines, first))
        return ToolResult((f"[{name}: {'; '.join(notes)}]\n" if notes else "") + body)

    def _edit(
        self,
        path: str,
        old_string: object = None,
        new_string: object = None,
        replace_all: object = None,
        edits: object = None,
    ) -> ToolResult:
        replacements = _replacements(old_string, new_string, replace_all, edits)
        target = self._file(path, missing="edit changes an existing file, file_write creates one")
        data = _read_regular(target, path, TEXT_CAP)
        text = decoded(data)
        if text is None:
            raise ToolRefused(f"{path!r}: binary file, {len(data)} bytes: edit changes UTF-8 text only")
        try:
            changed, summaries = apply_edits(text, replacements)
        except ToolRefused as exc:
            raise ToolRefused(f"{exc} in {self.shown(target)}; nothing was written") from None
        write_atomically(target, changed.encode())
        before, after = len(split_lines(text)), len(split_lines(changed))
        edits_said = f"{len(summaries)} edits, " if len(summaries) > 1 else ""
        return ToolResult(f"edited {self.shown(target)} ({edits_said}{before} → {after} lines): {'; '.join(summaries)}")

    def _file_write(self, path: str, content: str) -> ToolResult:
        if not isinstance(content, str):
            raise ToolRefused("content must be text")
        target = self._file(path, must_exist=False)
        existed = target.exists()
        if existed and not target.is_file():
            raise ToolRefused(f"{path!r} is not a regular file")
        data = content.encode("utf-8", errors="strict")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, data)
        did = "replaced" if existed else "created"
        return ToolResult(f"{did} {self.shown(target)} ({len(data)} bytes, {len(split_lines(content))} lines)")

    def _grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, ignore_case: bool = False
    ) -> ToolResult:
        if not isinstance(pattern, str) or not pattern:
            raise ToolRefused("pattern must be a non-empty text")
        if not isinstance(ignore_case, bool):
            raise ToolRefused("ignore_case must be true or false")
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ToolRefused(f"bad regex {pattern!r}: {exc}") from None
        keep = None if glob is None else glob_matcher(glob, names_only="/" not in str(glob))
        folder = self.start if path is None else self.resolve(path)
        matches: list[str] = []
        for shown, text in self._searched(folder, path, keep):
            for number, line in enumerate(split_lines(text), 1):
                if regex.search(line):
                    if len(matches) == GREP_MATCHES:
                        return ToolResult("\n".join([*matches, "[... more matches not shown]"]))
                    matches.append(f"{shown}:{number}: {_cut(line.removesuffix(chr(13)), MATCH_LINE_CAP)}")
        if not matches:
            return ToolResult(f"no matches for {pattern!r} in {self.shown(folder)}")
        return ToolResult("\n".join(matches))

    def _glob(self, pattern: str, path: str | None = None) -> ToolResult:
        matches = glob_matcher(pattern)
        folder = self.start if path is None else self.resolve(path)
        if not folder.is_dir():
            said = "is a file" if folder.exists() else "does not exist"
            raise ToolRefused(f"{path!r} {said}: glob searches a folder")
        found = sorted(
            (
                (info.st_mtime_ns, self.shown(link))
                for link, _real, rel, info in walk_files(folder, self._linkable)
                if matches(rel)
            ),
            key=lambda item: (-item[0], item[1]),
        )
        if not found:
            return ToolResult(f"no files match {pattern!r} in {self.shown(folder)}")
        lines = [shown for _mtime, shown in found[:GLOB_FILES]]
        if len(found) > GLOB_FILES:
            lines.append(f"[... {len(found) - GLOB_FILES} more files not shown: narrow the pattern]")
        return ToolResult("\n".join(lines))

    # -- walking --

    def _searched(self, folder: Path, given: object, keep: Callable[[str], bool] | None) -> Iterator[tuple[str, str]]:
        """(shown path, text) of what grep reads: one file named outright, or a folder's files."""
        if folder.is_file():
            data = _read_regular(folder, given, GREP_FILE_CAP)
            text = decoded(data)
            if text is None:
                raise ToolRefused(f"{given!r}: binary file, {len(data)} bytes: not searched")
            yield self.shown(folder), text
            return
        if not folder.is_dir():
            raise ToolRefused(f"no such file or folder {given!r}")
        for link, real, rel, info in walk_files(folder, self._linkable):
            if info.st_size > GREP_FILE_CAP or (keep is not None and not keep(rel)):
                continue
            try:
                text = decoded(_read_regular(real, rel, GREP_FILE_CAP))
            except (OSError, ToolRefused):
                continue  # gone, or swapped for something else since the walk saw it
            if text is not None:
                yield self.shown(link), text

    def _linkable(self, real: Path) -> bool:
        return self._within(real) and not self._in_git(real)


def walk_files(folder: Path, linkable: Callable[[Path], bool]) -> Iterator[tuple[Path, Path, str, os.stat_result]]:
    """(path as walked, real path, path relative to folder, stat) of the regular files below folder,
    in name order. Skips every .git, never enters a symlinked folder (it would walk a place twice,
    or loop), and skips a linked file whose target `linkable` refuses (outside the copy, in a .git)."""
    pending = [(folder, "")]
    while pending:
        where, prefix = pending.pop()
        try:
            entries = sorted(os.scandir(where), key=lambda entry: entry.name)
        except OSError:
            continue
        folders = []
        for entry in entries:
            if entry.name.lower() == ".git":
                continue
            rel = prefix + entry.name
            try:
                if entry.is_symlink():
                    real = Path(entry.path).resolve()
                    if not linkable(real):
                        continue
                    info = os.stat(real)
                    if stat.S_ISREG(info.st_mode):
                        yield Path(entry.path), real, rel, info
                elif entry.is_dir(follow_symlinks=False):
                    folders.append((Path(entry.path), rel + "/"))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), Path(entry.path), rel, entry.stat(follow_symlinks=False)
            except (OSError, RuntimeError):
                continue
        pending.extend(reversed(folders))


# -- text --


def decoded(data: bytes) -> str | None:
    """The text of a file, or None when it is binary (a NUL in its first 8 KB, or not UTF-8)."""
    if b"\x00" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_lines(text: str) -> list[str]:
    """Lines as `cat -n` and grep count them: split at \\n only, no phantom line after the last."""
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _cut(line: str, cap: int) -> str:
    return line if len(line) <= cap else f"{line[:cap]}… [line cut: {len(line)} characters]"


def _positive(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolRefused(f"{name} must be a whole number from 1 (got {value!r})")
    return value


# -- edits --


def _replacements(old: object, new: object, replace_all: object, edits: object) -> list[tuple[str, str, bool]]:
    """The (old, new, replace_all) of an edit call, in order, each checked before anything is read."""
    single = old is not None or new is not None or replace_all is not None
    if edits is not None and single:
        raise ToolRefused("give either old_string/new_string or edits, not both")
    if edits is None:
        items = [{"old_string": old, "new_string": new, "replace_all": replace_all}]
    elif isinstance(edits, list) and edits:
        items = edits
    else:
        raise ToolRefused("edits must be a non-empty list of {old_string, new_string, replace_all?}")
    checked = []
    for index, item in enumerate(items, 1):
        which = f"edit {index}" if edits is not None else "the edit"
        if not isinstance(item, dict):
            raise ToolRefused(f"{which} must be an object with old_string and new_string")
        unknown = set(item) - {"old_string", "new_string", "replace_all"}
        if unknown:
            raise ToolRefused(f"{which} has unknown keys: {', '.join(sorted(map(str, unknown)))}")
        old_s, new_s, every = item.get("old_string"), item.get("new_string"), item.get("replace_all")
        if not isinstance(old_s, str) or not isinstance(new_s, str):
            raise ToolRefused(f"{which}: old_string and new_string must both be text")
        if not old_s:
            raise ToolRefused(f"{which}: old_string is empty (to create a file use file_write)")
        if old_s == new_s:
            raise ToolRefused(f"{which}: old_string and new_string are the same: nothing would change")
        if every is not None and not isinstance(every, bool):
            raise ToolRefused(f"{which}: replace_all must be true or false")
        checked.append((old_s, new_s, bool(every)))
    return checked


def apply_edits(text: str, edits: list[tuple[str, str, bool]]) -> tuple[str, list[str]]:
    """The text after every (old, new, replace_all) in order, and a line saying what each did.

    Raises ToolRefused naming the edit that failed; the caller writes nothing then. An old
    string with \\n that is not in a CRLF file is tried again with \\r\\n, since file_read
    shows such a file without its \\r.
    """
    summaries = []
    for index, (old, new, every) in enumerate(edits, 1):
        which = f"edit {index} of {len(edits)}" if len(edits) > 1 else "the edit"
        at = _occurrences(text, old)
        if not at and "\r\n" in text and "\n" in old and "\r" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
            at = _occurrences(text, old)
        if not at:
            raise ToolRefused(f"{which}: old_string not found")
        if len(at) > 1 and not every:
            raise ToolRefused(f"{which}: old_string found {len(at)} times: add more context or set replace_all")
        line = text.count("\n", 0, at[0]) + 1
        shape = f"{_count(old.count(chr(10)) + 1, 'line')} → {_count(new.count(chr(10)) + 1, 'line')}"
        if every:
            replaced = text.count(old)
            text = text.replace(old, new)
            summaries.append(f"{_count(replaced, 'occurrence')} from line {line}, {shape}")
        else:
            text = text[: at[0]] + new + text[at[0] + len(old) :]
            summaries.append(f"line {line}, {shape}")
    return text, summaries


def _occurrences(text: str, old: str) -> list[int]:
    """Where old starts in text, overlaps included: 'aa' is not unique in 'aaa'."""
    found, at = [], text.find(old)
    while at != -1:
        found.append(at)
        at = text.find(old, at + 1)
    return found


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


# -- the disk --


def _read_regular(target: Path, given: object, cap: int) -> bytes:
    """The bytes of a regular file no bigger than cap. O_NOFOLLOW: resolve() left no link at the
    end of the path, so one found there now was swapped in since; O_NONBLOCK: a FIFO must not hang."""
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ToolRefused(f"{given!r} is not a regular file")
        if info.st_size > cap:
            raise ToolRefused(f"{given!r} is {info.st_size} bytes, over the {cap // (1024 * 1024)} MB this tool reads")
        return handle.read(cap + 1)


def write_atomically(target: Path, data: bytes) -> None:
    """Write a temporary file beside target, then rename it over target: readers see the old file
    or the new one, never half of one. An existing file keeps its mode; a new one gets the umask's."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    temporary = target.parent / f".{secrets.token_hex(8)}.writing"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def glob_matcher(pattern: object, *, names_only: bool = False) -> Callable[[str], bool]:
    """A test of a relative posix path (or, names_only, of a file name) against a glob pattern:
    `*` and `?` within a name, `**` as a whole part for any number of folders, `[...]`, `{a,b}`."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolRefused("the glob pattern must be a non-empty text")
    if "\x00" in pattern:
        raise ToolRefused(f"{pattern!r} holds a NUL byte")
    if pattern.startswith("/"):
        raise ToolRefused(f"glob pattern {pattern!r} is absolute: give a pattern relative to `path`")
    if ".." in pattern.split("/"):
        raise ToolRefused(f"glob pattern {pattern!r} has '..': give the folder to search as `path`")
    try:
        regexes = [re.compile(_glob_regex(alternative, names_only)) for alternative in _braces(pattern)]
    except re.error as exc:
        raise ToolRefused(f"bad glob pattern {pattern!r}: {exc}") from None
    return lambda rel: any(regex.fullmatch(rel.rsplit("/", 1)[-1] if names_only else rel) for regex in regexes)


def _braces(pattern: str) -> list[str]:
    """`a.{py,md}` → [a.py, a.md], left to right, nested too; a brace without a comma stays as it is."""
    depth, opened = 0, 0
    for index, char in enumerate(pattern):
        if char == "{":
            opened, depth = (index if depth == 0 else opened), depth + 1
        elif char == "}" and depth:
            depth -= 1
            options = _top_level_split(pattern[opened + 1 : index]) if depth == 0 else []
            if len(options) > 1:
                expanded: list[str] = []
                for option in options:
                    expanded += _braces(pattern[:opened] + option + pattern[index + 1 :])
                    if len(expanded) > GLOB_ALTERNATIVES:
                        raise ToolRefused(f"glob pattern {pattern!r} expands to over {GLOB_ALTERNATIVES} patterns")
                return expanded
    return [pattern]


def _top_level_split(body: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in body:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        current += char
    return [*parts, current]


def _glob_regex(pattern: str, names_only: bool) -> str:
    if names_only:
        return _name_regex(pattern)
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if not parts:
        raise ToolRefused(f"glob pattern {pattern!r} names no file")
    # `**/**` is `**`: consecutive ones would only make the regex backtrack for nothing
    parts = [part for index, part in enumerate(parts) if not (part == "**" and parts[index - 1 : index] == ["**"])]
    regex = ""
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]*/)*"
        else:
            regex += _name_regex(part) + ("" if last else "/")
    return regex


def _name_regex(part: str) -> str:
    """One part of a glob (no `/` in it) as a regex."""
    regex, index = "", 0
    while index < len(part):
        char = part[index]
        if char == "*":
            while index + 1 < len(part) and part[index + 1] == "*":
                index += 1
            regex += "[^/]*"
        elif char == "?":
            regex += "[^/]"
        elif char == "[" and (end := _class_end(part, index)) != -1:
            body = part[index + 1 : end]
            negate = body[:1] in ("!", "^")
            body = "".join(c if c == "-" else re.escape(c) for c in (body[1:] if negate else body))
            regex += f"[^/{body}]" if negate else f"[{body}]"
            index = end
        else:
            regex += re.escape(char)
        index += 1
    return regex


def _class_end(part: str, start: int) -> int:
    """Where the `[...]` opened at start closes (a `]` first in it is a member), or -1."""
    index = start + 1
    if index < len(part) and part[index] in "!^":
        index += 1
    if index < len(part) and part[index] == "]":
        index += 1
    return part.find("]", index)
