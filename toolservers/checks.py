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
