"""`auto mcp add|list|rm|test` (docs/mcp.md): the CLI twin of the MCP servers page, for admins on
the server. Returns the lines to print, or raises CommandError with the service's message;
`auto` (cli/management/commands/auto.py) calls it. Secrets are never printed back."""

from __future__ import annotations

from django.core.management.base import CommandError

from runs.wiring import mcp_sandbox_wrap
from toolservers.models import ToolServer, Transport
from toolservers.services import ServerError, parse_pairs, server_add, server_remove, server_test

USAGE = (
    "auto mcp add NAME --command 'PROGRAM ARGS' [--env NAME=VALUE ...] [--outside-sandbox] | "
    "auto mcp add NAME --url https://… [--header 'Authorization: Bearer …' ...] | "
    "auto mcp list | auto mcp test NAME | auto mcp rm NAME"
)
ACTIONS = ["add", "list", "rm", "test"]


def mcp_cli(action: str, words: list[str], options: dict) -> list[str]:
    try:
        if action == "list" and not words:
            return server_table()
        if action == "add" and len(words) == 1:
            command, url = options.get("mcp_command"), options.get("mcp_url")
            if bool(command) == bool(url):
                raise CommandError("auto mcp add: give either --command (stdio) or --url (streamable HTTP)")
            server = server_add(
                name=words[0],
                transport=Transport.STDIO if command else Transport.HTTP,
                command=command or "",
                env=parse_pairs(options.get("mcp_env") or [], "=", "--env", "env"),
                sandboxed=not options.get("mcp_outside_sandbox"),
                url=url or "",
                headers=parse_pairs(options.get("mcp_header") or [], ":", "--header", "headers"),
            )
            return [
                f"MCP server {server.name} added ({server.transport}); `auto mcp test {server.name}` lists its tools"
            ]
        if action == "rm" and len(words) == 1:
            return [server_remove(server=_server(words[0]))]
        if action == "test" and len(words) == 1:
            server = _server(words[0])
            tools, problems = server_test(server=server, wrap=mcp_sandbox_wrap())
            lines = [f"{server.name}: {len(tools)} tool(s)"]
            lines += [
                f"  {server.name}__{tool.name}: {tool.description.splitlines()[0] if tool.description else ''}"
                for tool in tools
            ]
            lines += [f"  ! {problem}" for problem in problems]
            return lines
    except ServerError as exc:
        raise CommandError(str(exc)) from None
    raise CommandError(USAGE)


def _server(name: str) -> ToolServer:
    server = ToolServer.objects.filter(name=name).first()
    if server is None:
        raise CommandError(f"no MCP server named {name!r} (auto mcp list)")
    return server


def server_table() -> list[str]:
    lines = [f"{'name':<20} {'transport':<9} {'tools':<5} where"]
    for server in ToolServer.objects.all():
        secrets = server.env_masked + server.headers_masked
        where = server.where + (
            " [outside the sandbox]" if server.transport == "stdio" and not server.sandboxed else ""
        )
        tools = str(len(server.tools)) if server.listed_at else "?"
        lines.append(
            f"{server.name:<20} {server.transport:<9} {tools:<5} {where}"
            + (f"  ({', '.join(secrets)})" if secrets else "")
        )
        if server.last_error:
            lines.append(f"{'':<20} last test failed: {server.last_error}")
    return lines
