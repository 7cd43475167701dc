"""The recipe check that needs the database: each `mcp:` entry names a registered server, and
each tool it narrows to is one that server listed at its last test (a server never listed is
not checked for tools). Registered with catalogue.checks, so sync, `auto check` and the editor
report it at the entry's line like any other recipe error."""

from __future__ import annotations

import os

from catalogue.recipe import RecipeIssue
from catalogue.spec import RecipeSpec
from toolservers.models import ToolServer


def mcp_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    if not spec.mcp:
        return []
    servers = {s.name: s for s in ToolServer.objects.all()}
    label = os.path.basename(spec.path) or spec.path
    known = ", ".join(sorted(servers)) or "none yet: an admin adds them on the MCP servers page"
    issues = []
    for use in spec.mcp:
        server = servers.get(use.server)
        if server is None:
            issues.append(
                RecipeIssue(
                    label, use.line, "mcp.server", f"expected a registered MCP server ({known}), got {use.server!r}"
                )
            )
            continue
        if use.tools is None or server.listed_at is None or server.last_error:
            continue
        listed = server.tool_names
        for tool in use.tools:
            if tool not in listed:
                issues.append(
                    RecipeIssue(
                        label,
                        use.line,
                        "mcp.tools",
                        f"expected a tool of {use.server} ({', '.join(listed) or 'it lists none'}), got {tool!r}",
                    )
                )
    return issues


def unregistered_servers(spec: dict) -> str | None:
    """A stored version (sync's spec dict) naming servers removed since it was checked."""
    named = [use.get("server") for use in spec.get("mcp") or []]
    if not named:
        return None
    known = set(ToolServer.objects.filter(name__in=named).values_list("name", flat=True))
    missing = [name for name in named if name not in known]
    return f"mcp: not a registered MCP server (any more): {', '.join(missing)}" if missing else None


def approve_warnings(spec: RecipeSpec) -> list[str]:
    """`approve:` entries naming a tool of one of the recipe's MCP servers that the recipe is
    not offered — a typo, or a tool `tools:` leaves out — would never hold anything. Only for a
    server that listed its tools at its last test (the others are not known yet)."""
    uses = {use.server: use for use in spec.mcp}
    servers = {s.name: s for s in ToolServer.objects.filter(name__in=uses) if s.listed_at and not s.last_error}
    warnings = []
    for entry in spec.approve:
        server_name, _, tool = entry.partition(":")[0].partition("(")[0].strip().partition("__")
        server = servers.get(server_name)
        if server is None or not tool:
            continue
        narrowed = uses[server_name].tools
        offered = [name for name in server.tool_names if narrowed is None or name in narrowed]
        if tool not in offered:
            which = "" if narrowed is None else " this recipe is offered"
            warnings.append(
                f"approve: {entry!r} names no tool of MCP server {server_name}{which} "
                f"({', '.join(sorted(offered)) or 'none'}), so it never holds anything"
            )
    return warnings
