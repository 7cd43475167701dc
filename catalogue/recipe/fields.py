"""The recipe's fields: which keys exist where, and one reader per frontmatter field or block
(docs/recipes.md). Each reader takes the Reader, a YAML node and the key's dotted path, and returns
the value or None after recording why it refused.

Pure: stdlib + PyYAML, no Django, no I/O.
"""

from __future__ import annotations

import functools
import pathlib
import posixpath
import re

import yaml

from budgets.efforts import EFFORTS, effort_refusal, takes_effort
from budgets.units import UnitError, parse_duration
from catalogue.recipe.loop_fields import (
    DO_BUDGET_KEYS,
    DO_KEYS,
    FLOOR_KEYS,
    LOOP_KEYS,
    PROMPTS_KEYS,
    WATCH_KEYS,
    WHILE_BUDGET_KEYS,
    WHILE_KEYS,
    read_loop,
    refuse_pinned_efforts,
)
from catalogue.recipe.notify_fields import NAME_EXPECTED, NAME_RE, NOTIFY_MAPPING_KEYS, notify_warnings, read_notify
from catalogue.recipe.placeholders import BUILTIN_PLACEHOLDERS, placeholders
from catalogue.recipe.reader import BAD, NULL_TAG, Reader
from catalogue.spec import FOLDER_WORDS, FOLDERS, KINDS, Kind, McpUse

# --- the schema: which keys exist where -------------------------------------------------

_TOP_KEYS = (
    "description",
    "kind",
    "web_profile",
    "url",
    "web_read",
    "record",
    "args",
    "output_dir",
    "schedule",
    "loop",
    "step",
    "approve",
    "approve_timeout",
    "allowed_domains",
    "model",
    "judge_model",
    "effort",
    "notify",
    "workdir",
    "mcp",
    "base",
    "setup",
    "until_command",
    "on_success",
)
_WEB_ONLY = ("web_profile", "url", "web_read", "record")
_TASK_ONLY = ("workdir", "base", "setup", "until_command")
CODE_WORKDIR = "."  # where a code recipe without `workdir:` works: the repository's root
# what only a working copy gives meaning to (docs/coding-loops.md)
_WORKDIR_ONLY = ("base", "setup", "until_command")
_MCP_KEYS = ("server", "tools")

# Where each mapping sits, so a key put at the wrong level can be pointed home
# (`until:` directly under `loop.while` is the classic slip). Legacy `step` is left out
# on purpose: nobody should be sent there.
HOMES = {
    "": _TOP_KEYS,
    "loop": LOOP_KEYS,
    "loop.do": DO_KEYS,
    "loop.do.budget": DO_BUDGET_KEYS,
    "loop.do.budget.watch": WATCH_KEYS,
    "loop.do.budget.watch.floor": FLOOR_KEYS,
    "loop.while": WHILE_KEYS,
    "loop.while.budget": WHILE_BUDGET_KEYS,
    "loop.while.prompts": PROMPTS_KEYS,
    "notify": NOTIFY_MAPPING_KEYS,
}

_ARG_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HOST_RE = re.compile(r"(\*\.)?(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\Z", re.IGNORECASE)
# a web address, or a path on this dashboard's own site (RYSH_SITE_URL), such as /demo-site/
URL_RE = re.compile(r"(https?://\S+|/(?!/)\S*)\Z", re.IGNORECASE)
_CRON_FIELD_RE = re.compile(r"[0-9A-Za-z*/,\-]+\Z")
_SCHEDULE_MACROS = ("@hourly", "@daily", "@weekly", "@monthly")
_SCHEDULE_EXPECTED = 'off, @hourly, @daily, @weekly, @monthly, "@every <duration>" or 5 cron fields such as "0 7 * * *"'
_NAME_EXPECTED = NAME_EXPECTED


# --- the recipe's top level -----------------------------------------------------------------


def read_recipe(r: Reader, keys: dict, path: str, kind_arg: str | None, name_arg: str | None) -> dict:
    """RecipeSpec keyword arguments (all but path and prompt); issues go to `r`."""
    kind = _resolve_kind(r, path, kind_arg, keys.get("kind"))
    name = _resolve_name(r, path, name_arg)
    if kind in (Kind.TASK, Kind.CODE):
        for key in _WEB_ONLY:
            if key in keys:
                r.add(keys[key], key, f"applies to web recipes only (this is a {kind} recipe)")
        keys = {key: node for key, node in keys.items() if key not in _WEB_ONLY}
    if kind is Kind.WEB:
        for key in _TASK_ONLY:
            if key in keys:
                r.add(
                    keys[key],
                    key,
                    "applies to task and code recipes only (a web recipe drives a browser, not a working copy)",
                )
        keys = {key: node for key, node in keys.items() if key not in _TASK_ONLY}
    values = r.read_keys(
        keys,
        "",
        {
            "description": r.text,
            "web_profile": functools.partial(
                r.matching, pattern=NAME_RE, what=f"a browser profile name ({_NAME_EXPECTED})"
            ),
            "url": functools.partial(_read_url, r),
            "web_read": functools.partial(r.choice, options=("text", "screenshot")),
            "record": r.boolean,
            "args": functools.partial(_read_arg_names, r),
            "output_dir": functools.partial(_read_output_dir, r, kind=kind, name=name),
            "schedule": functools.partial(_read_schedule, r),
            "approve": functools.partial(_read_tool_names, r),
            "approve_timeout": functools.partial(_read_approve_timeout, r),
            "allowed_domains": functools.partial(_read_domains, r),
            "model": r.text,
            "judge_model": r.text,
            "effort": functools.partial(r.choice, options=EFFORTS),
            "notify": functools.partial(read_notify, r),
            "workdir": functools.partial(_read_workdir, r),
            "mcp": functools.partial(_read_mcp, r),
            "base": functools.partial(_read_base, r),
            "setup": functools.partial(_read_setup, r),
            "until_command": functools.partial(_read_command, r),
            "on_success": functools.partial(_read_on_success, r, kind=kind),
        },
    )
    if "on_success" in values:
        values["on_success_line"] = r.line(keys["on_success"])
    if "workdir" in values:
        values["workdir_line"] = r.line(keys["workdir"])
    elif kind is Kind.CODE and "workdir" not in keys:
        values["workdir"] = CODE_WORKDIR  # rysh's code kind is anchored to a folder: the root by default
    if "base" in values:
        values["base_line"] = r.line(keys["base"])
    if "workdir" not in keys and kind is Kind.TASK:
        for key in _WORKDIR_ONLY:
            if key in values:
                r.add(keys[key], key, "applies to coding loops only: add workdir: (the folder the agent works in)")
    do, loop_while, warnings, do_field = read_loop(r, keys)
    if "effort" in values:
        values["effort_line"] = r.line(keys["effort"])
        if do.effort is None:  # loop.do.effort wins for the task leg: this one is not sent then
            _refuse_effort_for_pinned_model(r, keys["effort"], do.model or values.get("model"))
    refuse_pinned_efforts(r, do, loop_while, where=do_field, model=values.get("model"), judge=values.get("judge_model"))
    if "notify" in keys:
        warnings += notify_warnings(r, keys["notify"])
    if kind is not None and name is not None:
        values.setdefault("output_dir", default_output_dir(kind, name))
    return {**values, "kind": kind, "name": name, "do": do, "loop_while": loop_while, "warnings": tuple(warnings)}


def _refuse_effort_for_pinned_model(r: Reader, node, model: str | None) -> None:
    """A recipe that pins its model and sets `effort:` for one that takes none is refused at
    the effort line (an unpinned recipe is checked against the default model: runs.checks)."""
    if model is not None and not takes_effort(model):
        r.add(node, "effort", effort_refusal(model))


APPROVE_TIMEOUT_RANGE = (60, 7 * 24 * 3600)  # a minute to a week


def _read_approve_timeout(r: Reader, node, field) -> int | None:
    """How long an approval waits for a person before it is rejected (default: the setting's 30m)."""
    seconds = r.duration(node, field)
    low, high = APPROVE_TIMEOUT_RANGE
    if seconds is not None and not low <= seconds <= high:
        r.add(node, field, f"expected a duration from 1m to 7d, got {r.value(node, field)!r}")
        return None
    return seconds


def default_output_dir(kind: str, name: str) -> str:
    return f"{Kind(kind).folder}/{name}/results"


def own_output_dir(kind: str | None, name: str | None) -> str:
    """How to say where a recipe's results may go, for messages."""
    mine = f"{Kind(kind).folder}/{name}/..." if kind is not None and name is not None else "..."
    return f"a folder of this recipe's own ({mine}, or a folder outside {FOLDER_WORDS})"


def foreign_output_dir(relative: str, kind: str | None, name: str | None) -> str | None:
    """Why a normalised, root-relative output_dir is not this recipe's own, or None when it is.

    The results root is shared: `webs/<name>/`, `tasks/<name>/` and `codes/<name>/` belong to
    the recipes of those names, so a recipe may only use its own `<folder>/<name>/...` there; the
    root itself (`.`) and the bare kind folders hold everybody's results. A folder of its own
    outside them (`halilagin-medium/results`) stays allowed.
    """
    parts = [part for part in relative.split("/") if part]
    if not parts or parts == ["."]:
        return "the results root itself, shared by every recipe"
    top = parts[0].casefold()  # results may sit on a case-insensitive file system
    if top not in KINDS:
        return None
    if len(parts) == 1:
        return f"the {parts[0]} folder, shared by every {Kind.of_folder(top)} recipe"
    if kind is None or name is None:  # already refused for its kind or name
        return None
    if top == Kind(kind).folder and parts[1].casefold() == name:
        return None
    return f"the results folder of another recipe ({parts[0]}/{parts[1]})"


def _resolve_kind(r: Reader, path: str, kind_arg: str | None, node: yaml.Node | None) -> Kind | None:
    claims: list[tuple[Kind, str]] = []  # (kind, who says so)
    refused = False
    if kind_arg is not None:
        kind = _kind_called(kind_arg)
        if kind is not None:
            claims.append((kind, f"the command asks for a {kind} recipe"))
        else:
            r.add(None, "kind", f"expected {' or '.join(Kind)}, got {kind_arg!r}")
            refused = True
    folder = _automation_folder(path)
    if folder is not None:
        claims.append((Kind.of_folder(folder), f"the file is under .rysh/automations/{folder}"))
    if node is not None:
        word = r.choice(node, "kind", tuple(Kind))
        if word is None:
            refused = True
        else:
            claims.append((Kind(word), f"the file says kind: {word}"))
    kinds = {kind for kind, _ in claims}
    if len(kinds) > 1:
        r.add(node, "kind", "the kinds disagree: " + "; ".join(who for _, who in claims))
        return None
    if not kinds and not refused and not r.broken:
        r.add(
            None,
            "kind",
            f"cannot tell the kind: put the file under .rysh/automations/{'|'.join(KINDS)}/, "
            f"or set kind: {'|'.join(Kind)}",
        )
    return kinds.pop() if kinds else None


def _kind_called(word: str) -> Kind | None:
    """The kind a command asked for: `web`/`task`/`code`, or a folder name (`webs`/`tasks`/`codes`)."""
    if word in FOLDERS:
        return Kind(word)
    return KINDS.get(word)


def _automation_folder(path: str) -> str | None:
    """`webs`/`tasks`/`codes` when the path runs through `.rysh/automations/<folder>/`."""
    parts = pathlib.PurePath(path).parts
    for index in range(len(parts) - 3):
        if parts[index : index + 2] == (".rysh", "automations") and parts[index + 2] in KINDS:
            return parts[index + 2]
    return None


def _resolve_name(r: Reader, path: str, name_arg: str | None) -> str | None:
    name = name_arg if name_arg is not None else pathlib.PurePath(path).stem
    if NAME_RE.match(name):
        return name
    fix = "" if name_arg is not None else "; rename the file"
    r.add(None, "name", f"expected a recipe name of {_NAME_EXPECTED}, got {name!r}{fix}")
    return None


# --- top-level fields -----------------------------------------------------------------------


_URL_EXPECTED = "a web address starting with http:// or https:// (or a path on this dashboard, starting with /)"


def _read_url(r: Reader, node, field) -> str | None:
    """The start page: a web address, or one written with placeholders (rysh's `url:
    "{{start_url}}"`), filled with the run's arguments and checked when a run starts."""
    value = r.value(node, field)
    if value is BAD:
        return None
    if isinstance(value, str) and placeholders(value) and value.strip() and not re.search(r"\s", value.strip()):
        return value.strip()
    return r.matching(node, field, pattern=URL_RE, what=_URL_EXPECTED)


def _read_arg_names(r: Reader, node, field) -> tuple[str, ...] | None:
    items = r.items(node, field, "argument names")
    if items is None:
        return None
    names: list[str] = []
    for item, value in items:
        if value is BAD:
            continue
        if not isinstance(value, str) or not _ARG_RE.match(value):
            r.expected(item, field, "an argument name of letters, digits and _ (not starting with a digit)")
        elif value in BUILTIN_PLACEHOLDERS or re.fullmatch(r"arg[0-9]+", value):
            r.add(item, field, f"{value!r} is a built-in placeholder: pick another name")
        elif value in names:
            r.add(item, field, f"argument {value!r} is listed twice")
        else:
            names.append(value)
    return tuple(names)


def _read_tool_names(r: Reader, node, field) -> tuple[str, ...] | None:
    items = r.items(node, field, "tool names")
    if items is None:
        return None
    names = []
    for item, value in items:
        if isinstance(value, str) and value.strip():
            names.append(value.strip())
        elif value is not BAD:
            r.expected(item, field, "a tool name")
    return tuple(names)


def _read_domains(r: Reader, node, field) -> tuple[str, ...] | None:
    """Host names, stored lowercased (hosts are case-insensitive)."""
    items = r.items(node, field, "host names")
    if items is None:
        return None
    hosts = []
    for item, value in items:
        if isinstance(value, str) and _HOST_RE.match(value):
            hosts.append(value.lower())
        elif value is not BAD:
            r.expected(item, field, "a host name such as example.com or *.example.com")
    return tuple(hosts)


def _read_output_dir(r: Reader, node, field, *, kind: Kind | None, name: str | None) -> str | None:
    """A relative path inside the results root and not another recipe's folder, normalised with '/'."""
    value = r.text(node, field)
    if value is None:
        return None
    # Backslashes count as separators so `..\\x` cannot slip past on any platform.
    normal = posixpath.normpath(value.replace("\\", "/"))
    if "\x00" in value:
        r.expected(node, field, "a folder path without NUL characters")
    elif normal.startswith("/") or re.match(r"[A-Za-z]:", value):
        r.add(node, field, f"expected a folder relative to the results root, got {value!r} (an absolute path)")
    elif normal == ".." or normal.startswith("../"):
        r.add(node, field, f"{value!r} climbs out of the results root with '..': output_dir must stay inside it")
    elif (foreign := foreign_output_dir(normal, kind, name)) is not None:
        r.add(node, field, f"expected {own_output_dir(kind, name)}, got {value!r}: {foreign}")
    else:
        return normal
    return None


def _read_workdir(r: Reader, node, field) -> str | None:
    """A folder of the recipes repository, relative to its root ("." for the root itself),
    normalised with '/'. Whether it exists is a fact of the repository at a commit: the
    catalogue checks that (catalogue.workspace_check), the reader only the shape."""
    value = r.value(node, field)
    if value is BAD:
        return None
    if not isinstance(value, str) or not value.strip():
        r.expected(node, field, 'a folder of the repository, relative to its root ("." for the root)')
        return None
    if "\x00" in value:
        r.expected(node, field, "a folder path without NUL characters")
        return None
    try:
        return normal_workdir(value)
    except ValueError as exc:
        r.add(node, field, str(exc))
    return None


def normal_workdir(value: str) -> str:
    """A folder of the repository as given (`workdir:`, or `--workdir` at run time), normalised
    with '/'; ValueError says why it is not one (whether it exists needs the repository)."""
    value = value.strip()
    normal = posixpath.normpath(value.replace("\\", "/"))
    if not value or "\x00" in value:
        raise ValueError('expected a folder of the repository, relative to its root ("." for the root)')
    if normal.startswith("/") or value.startswith("~") or re.match(r"[A-Za-z]:", value):
        raise ValueError(
            f'expected a folder relative to the repository\'s root ("." for the root), got {value!r} (an absolute path)'
        )
    if normal == ".." or normal.startswith("../"):
        raise ValueError(f"{value!r} climbs out of the repository with '..': workdir must stay inside it")
    if normal == ".git" or normal.startswith(".git/"):
        raise ValueError(f"{value!r} is git's own folder, not a place to work")
    return normal


# a branch, tag or commit as git would take it: no spaces, no `..`, none of ~^:?*[\ and not an option
_REF_RE = re.compile(r"(?!-)(?!.*\.\.)(?!.*@\{)[^\s~^:?*\[\\\x00-\x1f\x7f]+(?<![./])\Z")


def _read_base(r: Reader, node, field) -> str | None:
    """The branch, tag or commit a coding run's copy starts from. Whether it names one is a fact
    of the repository (catalogue checks, and the run's arming); here only its shape."""
    value = r.value(node, field)
    if value is BAD:
        return None
    if isinstance(value, str) and _REF_RE.match(value.strip()):
        return value.strip()
    r.expected(node, field, "a branch, tag or commit of the repository (main, release/2.1, 3f9c2ab)")
    return None


def _read_setup(r: Reader, node, field) -> tuple[str, ...] | None:
    """Shell commands run once, in order, when the copy is made."""
    items = r.items(node, field, "commands (strings), run in order when the working copy is made")
    if items is None:
        return None
    commands = []
    for item, value in items:
        if isinstance(value, str) and value.strip():
            commands.append(value.strip())
        elif value is not BAD:
            r.expected(item, field, "a command (a non-empty string)")
    if not items:
        r.expected(node, field, "at least one command")
    return tuple(commands)


def _read_on_success(r: Reader, node, field, *, kind: Kind | None) -> str | None:
    """`on_success: [<kind>:]<name>`: the recipe started when this one is fulfilled, written as the
    target `<kind>/<name>` (the same kind as this recipe when none is named). Whether that recipe
    exists, and the chain's depth and cycles, need the catalogue (catalogue.chains)."""
    value = r.value(node, field)
    if value is BAD:
        return None
    expected = "a recipe to start when this one is fulfilled: NAME or KIND:NAME (web, task or code)"
    if not isinstance(value, str) or not value.strip():
        r.expected(node, field, expected)
        return None
    word, _, name = value.strip().rpartition(":")
    target_kind = _kind_called(word) if word else kind
    if word and target_kind is None:
        r.add(node, field, f"expected {' or '.join(Kind)} before ':', got {word!r} ({expected})")
        return None
    if not NAME_RE.match(name):
        r.add(node, field, f"expected a recipe name of {_NAME_EXPECTED}, got {name!r}")
        return None
    if target_kind is None:  # the recipe's own kind is already refused
        return None
    return f"{Kind(target_kind)}/{name}"


def _read_command(r: Reader, node, field) -> str | None:
    value = r.value(node, field)
    if isinstance(value, str) and value.strip() and "\x00" not in value:
        return value.strip()
    if value is not BAD:
        r.expected(node, field, "a shell command (a non-empty string), e.g. python -m pytest -q")
    return None


_MCP_SERVER_RE = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
_MCP_TOOL_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_MCP_EXPECTED = "a list of MCP server names, or {server: NAME, tools: [...]} entries"


def _read_mcp(r: Reader, node, field) -> tuple[McpUse, ...] | None:
    """`mcp: [tracker]` or `- server: tracker` / `tools: [search_issues]`: the shape here; whether
    the server is registered and has those tools needs the database (toolservers.checks)."""
    if not isinstance(node, yaml.SequenceNode):
        r.expected(node, field, _MCP_EXPECTED)
        return None
    uses: list[McpUse] = []
    for item in node.value:
        if isinstance(item, yaml.MappingNode):
            keys = r.mapping(item, field, _MCP_KEYS)
            if keys is None:
                continue
            if "server" not in keys:
                r.add(item, field, "expected an entry with server (and optionally tools), got one without server")
                continue
            server = _mcp_server(r, keys["server"], f"{field}.server")
            tools = None
            if "tools" in keys:
                items = r.items(keys["tools"], f"{field}.tools", "tool names")
                if items is None:
                    continue
                if not items:  # no tool at all is surely not what was meant
                    r.expected(
                        keys["tools"],
                        f"{field}.tools",
                        "at least one tool name (leave tools out for all of the server's)",
                    )
                    continue
                tools = []
                for tool_node, value in items:
                    if isinstance(value, str) and _MCP_TOOL_RE.match(value):
                        tools.append(value)
                    elif value is not BAD:
                        r.expected(tool_node, f"{field}.tools", "a tool name of the server (letters, digits, _ or -)")
                tools = tuple(dict.fromkeys(tools))
            line = r.line(keys["server"])
        else:
            server, tools, line = _mcp_server(r, item, field), None, r.line(item)
        if server is None:
            continue
        if any(use.server == server for use in uses):
            r.add(item, field, f"server {server!r} is listed twice")
            continue
        uses.append(McpUse(server=server, tools=tools, line=line))
    return tuple(uses)


def _mcp_server(r: Reader, node, field) -> str | None:
    return r.matching(node, field, pattern=_MCP_SERVER_RE, what="an MCP server name (lowercase letters, digits or '-')")


def _read_schedule(r: Reader, node, field) -> str | None:
    if not isinstance(node, yaml.ScalarNode) or node.tag == NULL_TAG:
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
        duration = text[len("@every") :].strip()
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
