"""`rysh.pkg.yaml`: a package's manifest (docs/packages.md), read with the recipe reader's
machinery, so every refusal names the file, the line and the field.

    name: "@rysh/test-fixer"      version: "0.1.0"      type: agent | recipe | loop
    description: ...              entry: SKILL.md       min_rysh: "0.1.26"
    declares_tools: [bash, edit]  declares_channels / declares_env (humanoids')

Pure: stdlib + PyYAML, no Django, no I/O.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass

from catalogue.packages.tools import KNOWN_TOOLS, known_tool
from catalogue.recipe.reader import BAD, Reader, RecipeError, RecipeIssue

MANIFEST_NAME = "rysh.pkg.yaml"
MANIFEST_KEYS = (
    "name",
    "version",
    "type",
    "description",
    "entry",
    "min_rysh",
    "declares_tools",
    "declares_channels",
    "declares_env",
)
REQUIRED = ("name", "version", "type", "entry")
TYPES = ("agent", "recipe", "loop", "humanoid")
RUNNABLE_TYPES = ("agent", "recipe", "loop")
HUMANOID_REFUSAL = (
    "humanoid packages (agents that live in chat channels) are not supported here; an agent, recipe or loop package is"
)
# `@scope/name` or `name`, as npm-like registries spell them
_PACKAGE_NAME_RE = re.compile(r"(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*\Z")
_VERSION_RE = re.compile(r"[0-9]+(\.[0-9]+)*([-+][0-9A-Za-z.-]+)?\Z")
_ENTRY_RE = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*\Z")


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    type: str
    entry: str
    description: str = ""
    min_rysh: str | None = None
    declares_tools: tuple[str, ...] = ()
    declares_channels: tuple[str, ...] = ()
    declares_env: tuple[str, ...] = ()
    entry_line: int | None = None

    @property
    def label(self) -> str:
        """`@rysh/test-fixer@0.1.0`: what a run of it is labelled with."""
        return f"{self.name}@{self.version}"

    @property
    def short_name(self) -> str:
        """`test-fixer` of `@rysh/test-fixer`."""
        return self.name.rsplit("/", 1)[-1]


def read_manifest(text: str, *, path: str = MANIFEST_NAME) -> Manifest:
    """The manifest, or RecipeError with every issue found (file, line, field, expected)."""
    label = posixpath.basename(path) or path
    reader = Reader(label, 1, {"": MANIFEST_KEYS})
    try:
        keys = reader.top_level(text)
        values = reader.read_keys(
            keys,
            "",
            {
                "name": functools.partial(
                    reader.matching, pattern=_PACKAGE_NAME_RE, what='a package name such as "@team/test-fixer"'
                ),
                "version": functools.partial(_read_version, reader),
                "type": functools.partial(_read_type, reader),
                "description": reader.text,
                "entry": functools.partial(
                    reader.matching, pattern=_ENTRY_RE, what="a file of the package folder, such as SKILL.md"
                ),
                "min_rysh": functools.partial(_read_version, reader),
                "declares_tools": functools.partial(_read_tools, reader),
                "declares_channels": functools.partial(_read_words, reader, what="channel names"),
                "declares_env": functools.partial(_read_words, reader, what="environment variable names"),
            },
        )
        if not reader.broken:
            for key in REQUIRED:
                if key not in keys:
                    reader.add_at(1, key, f"missing: a package manifest names its {key}")
        if "entry" in values and ".." in values["entry"].split("/"):
            reader.add(keys["entry"], "entry", "expected a file inside the package folder, got a path that leaves it")
        if "entry" in keys:
            values["entry_line"] = reader.line(keys["entry"])
    finally:
        reader.close()
    if reader.issues:
        raise RecipeError(sorted(reader.issues, key=lambda i: (i.line or 0, i.column or 0)))
    return Manifest(**values)


def _read_version(r: Reader, node, field) -> str | None:
    value = r.value(node, field)
    text = str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    if text is not None and _VERSION_RE.match(text):
        return text
    if value is not BAD:
        r.expected(node, field, 'a version such as "0.1.0"')
    return None


def _read_type(r: Reader, node, field) -> str | None:
    value = r.choice(node, field, TYPES)
    if value == "humanoid":
        r.add(node, field, HUMANOID_REFUSAL)
        return None
    return value


def _read_tools(r: Reader, node, field) -> tuple[str, ...] | None:
    """Every declared tool; one we lack is an issue at its own line, never dropped."""
    items = r.items(node, field, "tool names")
    if items is None:
        return None
    names = []
    for item, value in items:
        if not isinstance(value, str) or not value.strip():
            if value is not BAD:
                r.expected(item, field, "a tool name")
            continue
        name = value.strip()
        if not known_tool(name):
            r.add(item, field, f"tool {name!r} is not available here (available: {', '.join(KNOWN_TOOLS)})")
        names.append(name)
    return tuple(names)


def _read_words(r: Reader, node, field, *, what: str) -> tuple[str, ...] | None:
    items = r.items(node, field, what)
    if items is None:
        return None
    words = []
    for item, value in items:
        if isinstance(value, str) and value.strip():
            words.append(value.strip())
        elif value is not BAD:
            r.expected(item, field, what[:-1])
    return tuple(words)


__all__ = ["MANIFEST_NAME", "Manifest", "RecipeError", "RecipeIssue", "read_manifest"]
