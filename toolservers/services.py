"""Registering MCP servers (admins: the MCP page and `auto mcp add|list|rm|test`), testing them,
and the configs a run's tools port starts them from. Adding and removing are audited
(`mcp.add`, `mcp.remove`); no secret is ever written to the audit log."""

from __future__ import annotations

import shlex
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.mcp_client import ListedTool, McpError, ServerConfig, list_server_tools
from audit.services import audit_record
from toolservers.models import SERVER_NAME_EXPECTED, SERVER_NAME_RE, ToolServer, Transport

ENV_NAME_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class ServerError(Exception):
    """A refusal, safe to show; `field` names the form field it belongs to."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def parse_pairs(lines: list[str] | str, sep: str, what: str, field: str) -> dict[str, str]:
    """`NAME=value` (env) or `Name: value` (headers), one a line or one an item."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    pairs = {}
    for line in lines:
        if not line.strip():
            continue
        key, found, value = line.partition(sep)
        key = key.strip()
        if not found or not key:
            raise ServerError(f"expected {what} as NAME{sep}value, got a line without {sep!r}", field)
        pairs[key] = value.strip() if sep == ":" else value
    return pairs


def server_add(
    *,
    user=None,
    name: str,
    transport: str,
    command: str | list[str] = "",
    env: dict[str, str] | None = None,
    sandboxed: bool = True,
    url: str = "",
    headers: dict[str, str] | None = None,
) -> ToolServer:
    name = (name or "").strip()
    if not SERVER_NAME_RE.match(name) or len(name) > 30:
        raise ServerError(f"expected a name of {SERVER_NAME_EXPECTED} (at most 30), got {name!r}", "name")
    if ToolServer.objects.filter(name=name).exists():
        raise ServerError(f"a server named {name!r} exists already: remove it first, or pick another name", "name")
    server = ToolServer(name=name, transport=transport, created_by=user if getattr(user, "pk", None) else None)
    if transport == Transport.STDIO:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ServerError("a stdio server needs the command that starts it", "command")
        bad = [key for key in (env or {}) if not key or set(key) - ENV_NAME_CHARS or key[0].isdigit()]
        if bad:
            raise ServerError(f"environment variable names are letters, digits and _: {bad[0]!r}", "env")
        server.command, server.env, server.sandboxed = argv, dict(env or {}), bool(sandboxed)
    elif transport == Transport.HTTP:
        parts = urlsplit((url or "").strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServerError("expected the server's URL, starting with http:// or https://", "url")
        server.url, server.headers = url.strip(), dict(headers or {})
    else:
        raise ServerError("expected stdio or http", "transport")
    with transaction.atomic():
        server.save()
        audit_record(
            actor=user,
            action="mcp.add",
            target=("mcp", server.pk, f"MCP server {server.name}"),
            # names only: the values are secrets
            detail={
                "transport": server.transport,
                "where": server.where,
                "env": sorted(server.env),
                "headers": sorted(server.headers),
                "sandboxed": server.sandboxed,
            },
        )
    return server


def server_remove(*, server: ToolServer, user=None) -> str:
    with transaction.atomic():
        audit_record(actor=user, action="mcp.remove", target=("mcp", server.pk, f"MCP server {server.name}"))
        server.delete()
    return f"MCP server {server.name} removed; recipes that name it are now in error"


def config_of(server: ToolServer, *, wrap: tuple[str, ...] = ()) -> ServerConfig:
    """What the client starts. `wrap`: the sandbox prefix, used for a sandboxed stdio server."""
    if server.transport == Transport.STDIO:
        return ServerConfig(
            name=server.name,
            transport="stdio",
            command=tuple(server.command),
            env=dict(server.env),
            wrap=wrap if server.sandboxed else (),
        )
    return ServerConfig(name=server.name, transport="http", url=server.url, headers=dict(server.headers))


def record_listing(name: str, tools: list[ListedTool], problems: str = "", error: str = "") -> None:
    """Keep what a server listed (a test, or a run's start), for the page and the recipe check."""
    fields = {"listed_at": timezone.now(), "last_error": error[:500]}
    if not error:
        fields |= {"tools": [tool.as_dict() for tool in tools], "problems": problems}
    ToolServer.objects.filter(name=name).update(**fields)


def server_test(*, server: ToolServer, wrap: tuple[str, ...] = ()) -> tuple[list[ListedTool], list[str]]:
    """Connect, list the tools, close; keeps the list (or the error) and returns it.
    Raises ServerError with what went wrong."""
    try:
        tools, problems = list_server_tools(
            config_of(server, wrap=wrap), timeout=settings.RYSH_MCP_CONNECT_TIMEOUT, path=settings.RYSH_SANDBOX_PATH
        )
    except McpError as exc:
        record_listing(server.name, [], error=str(exc))
        raise ServerError(f"{server.name}: {exc}") from None
    if not tools and not problems:
        problems = ["the server lists no tools"]
    record_listing(server.name, tools, "; ".join(problems))
    server.refresh_from_db()
    return tools, problems
