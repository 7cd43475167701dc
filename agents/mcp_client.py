"""Tools from MCP servers (docs/mcp.md): the client side, with the official SDK (`mcp`).

The engine is synchronous; the SDK is async (anyio). A `McpHub` runs one event loop in a
thread of its own for the pass: each server is held open by a task of that loop (a stdio
server is a child process in its own process group, started through agents.mcp_stdio's launcher
with only the environment its admin set; an HTTP server is a streamable-HTTP session with the
admin's headers), and the
engine's thread calls into it with a timeout. `McpTools` puts the servers' tools next to a
recipe's own tools (`<server>__<tool>`), and stops every server at the pass's end, on a
cancel and when the worker lets go of the run.

Every failure comes back as a tool error (ToolResult(is_error=True)), never as an exception
into the engine: a server that does not start (with the last lines of its stderr), a call that
times out, a server that dies (restarted once for the pass, then reported), a result too big
for RYSH_MCP_RESULT_CHARS or the room left (cut, its images left out, saying which limit did).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.mcp_logs import redact_urls
from agents.mcp_stdio import EnvFile, StderrTail, launch_argv
from agents.ports import ToolResult, ToolsPort, ToolsWrapper
from budgets.guard import BUDGET_CUT, cut_marker

log = logging.getLogger(__name__)

SEPARATOR = "__"  # `tracker__add_comment`
# what the Messages API accepts as a tool name
TOOL_NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
POLL_SECONDS = 0.2
CAP_CUT = ": a result is capped at RYSH_MCP_RESULT_CHARS; ask for less"
SSE_EVENT_FLOOR = 1024 * 1024  # the SDK's own limit on one server-sent event


def sse_event_limit(result_chars: int) -> int:
    """The largest server-sent event an HTTP server's result may come in: room for a result of
    RYSH_MCP_RESULT_CHARS characters at 6 bytes each in JSON (\\u escapes), twice (text and
    structured content), never below the SDK's 1 MB. Past it a result is refused unread."""
    return max(SSE_EVENT_FLOOR, 2 * 6 * result_chars + 64 * 1024)


@dataclass(frozen=True)
class ServerConfig:
    """One registered server, as the client needs it (toolservers.models.ToolServer.config())."""

    name: str
    transport: str  # "stdio" | "http"
    command: tuple[str, ...] = ()  # stdio: the program and its arguments
    env: dict[str, str] = field(default_factory=dict)  # stdio: the only environment it gets
    url: str = ""  # http
    headers: dict[str, str] = field(default_factory=dict)  # http
    wrap: tuple[str, ...] = ()  # stdio: a prefix that runs the command in the sandbox (bwrap …)


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


CONNECTION_CLOSED = -32000  # the JSON-RPC code the SDK gives a connection that ended


class McpError(Exception):
    """A server could not be reached or answered something we cannot use: safe to show."""


def schema_problem(schema: object) -> str | None:
    """Why an input schema cannot go to the model, or None: it must be a JSON Schema object."""
    if not isinstance(schema, dict):
        return "its input schema is not a JSON object"
    if schema.get("type", "object") != "object":
        return f"its input schema is of type {schema.get('type')!r}, not an object"
    try:
        from jsonschema import Draft202012Validator  # the SDK's own dependency; loaded only when a schema is checked
        from jsonschema.exceptions import SchemaError

        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is not JSON Schema ({exc.message[:200]})"
    return None


def base_environment(env: dict[str, str], path: str) -> dict[str, str]:
    """What a stdio server gets: a PATH (unless its admin set one) and the admin's variables."""
    return {"PATH": path, **env}


class ServerDied(Exception):
    """The server's connection ended during a call (a crash, a killed process, a dropped session)."""


# -- the event loop thread -------------------------------------------------------------------


class _Server:
    """One open connection, held by a task of the hub's loop."""

    def __init__(self, config: ServerConfig, path: str, event_bytes: int = SSE_EVENT_FLOOR):
        self.config = config
        self.path = path
        self.event_bytes = event_bytes
        self.session = None
        self.tools: list[ListedTool] = []
        self.problems: list[str] = []  # tools left out, and why
        self.ready: asyncio.Event | None = None
        self.stop: asyncio.Event | None = None
        self.error: str | None = None
        self.task: asyncio.Task | None = None
        self.starts = 0
        self.secrets: EnvFile | None = None  # stdio: the environment file, until it answered
        self.stderr: StderrTail | None = None  # stdio: its stderr's last lines

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done() and self.session is not None

    async def hold(self, connect_timeout: float) -> None:
        """Open the connection, list the tools, keep it open until told to stop."""
        from mcp import ClientSession  # the SDK: loaded with the first MCP server a run uses

        started = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio_fail_after(connect_timeout):
                    await session.initialize()
                    listed = await _list_all(session)
                if self.secrets is not None:
                    self.secrets.remove()  # it answered: the launcher has read them
                self.tools, self.problems = _usable(listed)
                self.session, started = session, True
                self.ready.set()
                await self.stop.wait()
        except BaseException as exc:  # noqa: BLE001 — anything: the server is down, say why
            if not isinstance(exc, asyncio.CancelledError):
                self.error = _describe(exc)
                if not started and self.stderr is not None and (said := self.stderr.last_lines()):
                    self.error += f"; its stderr ended: {redact_urls(said)}"
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
        finally:
            self.session = None
            self.ready.set()

    def _transport(self):
        config = self.config
        if config.transport == "http":
            import httpx2  # the SDK's HTTP client; loaded only for an HTTP server
            from mcp.client.streamable_http import streamable_http_client

            client = httpx2.AsyncClient(headers=dict(config.headers), timeout=httpx2.Timeout(30, read=300))
            transport = streamable_http_client(config.url, http_client=client, max_sse_event_size=self.event_bytes)
            return _with_client(client, transport)
        return self._stdio()

    @contextlib.asynccontextmanager
    async def _stdio(self):
        """The server started through the launcher, its environment in a private file (removed
        once it answered), the last lines of its stderr kept to say why a start failed."""
        from mcp.client.stdio import StdioServerParameters, stdio_client  # the SDK: loaded with a stdio server

        env = base_environment(self.config.env, self.path)
        with EnvFile(env) as secrets, StderrTail(hide=self.config.env.values()) as stderr:
            self.secrets, self.stderr = secrets, stderr
            argv = launch_argv(self.config.command, self.config.wrap, secrets.path, path=env["PATH"])
            params = StdioServerParameters(command=argv[0], args=argv[1:], env={}, cwd="/")
            async with stdio_client(params, errlog=stderr.writer) as streams:
                stderr.started()
                yield streams


@contextlib.asynccontextmanager
async def _with_client(client, transport):
    async with client, transport as streams:
        yield streams


def anyio_fail_after(seconds: float):
    import anyio  # the SDK's async layer

    return anyio.fail_after(seconds)


async def _list_all(session) -> list:
    tools, cursor = [], None
    for _ in range(20):  # pages; a server that pages for ever is cut off
        from mcp import types  # the SDK's types

        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += list(page.tools)
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
        if not cursor:
            break
    return tools


def _usable(listed: list) -> tuple[list[ListedTool], list[str]]:
    tools, problems = [], []
    for tool in listed:
        schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
        problem = schema_problem(schema) or _task_only(tool)
        if problem:
            problems.append(f"{tool.name}: left out: {problem}")
            continue
        tools.append(ListedTool(tool.name, (tool.description or "").strip(), dict(schema)))
    return tools, problems


def _task_only(tool) -> str | None:
    """A tool whose server runs it only as an MCP task: every plain call of it would fail."""
    if getattr(getattr(tool, "execution", None), "task_support", None) == "required":
        return "it runs only as an MCP task (task-augmented execution), which this client does not do"
    return None


CAP_WHY = "past RYSH_MCP_RESULT_CHARS, the size cap of a result"


def _pieces(result) -> list[str | dict[str, str]]:
    """A result's content in order: texts, and images the Messages API takes ({media_type,
    data}); other content said in a line. Structured content when nothing else was said."""
    pieces: list[str | dict[str, str]] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        media = getattr(block, "mime_type", None) or getattr(block, "mimeType", None)
        if kind == "text":
            pieces.append(block.text)
        elif kind == "image" and media in IMAGE_TYPES:
            pieces.append({"media_type": media, "data": block.data})
        elif kind == "resource":
            inner = block.resource
            pieces.append(getattr(inner, "text", None) or f"[resource {inner.uri}: binary, not shown]")
        elif kind == "resource_link":
            pieces.append(f"[resource link: {block.uri}]")
        else:
            pieces.append(f"[{kind or 'unknown'} content: not shown]")
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if not any(isinstance(piece, str) for piece in pieces) and structured is not None:
        pieces.append(json.dumps(structured, ensure_ascii=False))
    return pieces


def _joined_length(texts: list[str]) -> int:
    """Where the next piece starts in "\\n".join(texts) (after the joining newline)."""
    return sum(len(text) + 1 for text in texts)


def _describe(exc: BaseException) -> str:
    """A short, safe line for an exception (an exception group: its first leaf; a URL in it
    without its query or user part)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "did not answer in time"
    text = str(exc).strip() or type(exc).__name__
    return redact_urls(f"{type(exc).__name__}: {text}")[:300]


class McpHub:
    """The pass's servers, on an event loop in a thread of its own."""

    def __init__(
        self,
        configs: list[ServerConfig],
        *,
        connect_timeout: float = 20,
        path: str = "/usr/bin:/bin",
        event_bytes: int = SSE_EVENT_FLOOR,
    ):
        self.configs = {c.name: c for c in configs}
        self.connect_timeout = connect_timeout
        self.path = path
        self.event_bytes = event_bytes
        self.servers: dict[str, _Server] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    # the loop
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None or not self.thread or not self.thread.is_alive():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()
                loop.close()

            self.thread = threading.Thread(target=run, name="mcp-client", daemon=True)
            self.thread.start()
            started.wait(5)
            self.loop = loop
        return self.loop

    def _run(self, coro, timeout: float):
        future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    # servers
    def start(self, name: str) -> _Server:
        """Open one server (once a pass; a second start is the restart after it died)."""
        server = self.servers.get(name) or _Server(self.configs[name], self.path, self.event_bytes)
        self.servers[name] = server
        server.starts += 1
        server.error, server.session = None, None

        async def begin() -> None:
            server.ready, server.stop = asyncio.Event(), asyncio.Event()
            server.task = asyncio.get_running_loop().create_task(server.hold(self.connect_timeout))
            await server.ready.wait()

        try:
            self._run(begin(), self.connect_timeout + 10)
        except TimeoutError:
            server.error = "did not answer in time"
        return server

    def open(self, name: str) -> _Server:
        server = self.servers.get(name)
        if server is None:
            server = self.start(name)
        return server

    def call(self, name: str, tool: str, arguments: dict, timeout: float, cancelled: Callable[[], str | None]):
        """The CallToolResult, or raises TimeoutError / McpError / the cancel's reason."""
        server = self.servers[name]
        session = server.session
        if session is None:
            raise McpError(server.error or "not connected")
        future = asyncio.run_coroutine_threadsafe(session.call_tool(tool, arguments), self._ensure_loop())
        ends = time.monotonic() + max(timeout, 0)
        while True:
            try:
                return future.result(POLL_SECONDS)
            except TimeoutError:
                why = cancelled()
                if why or time.monotonic() >= ends:
                    future.cancel()
                    if why:
                        raise McpError(f"stopped: {why}") from None
                    raise TimeoutError from None
                if not server.alive:
                    future.cancel()
                    self._mark_dead(server, "the server stopped during the call")
                    raise ServerDied("the server stopped during the call") from None
                continue
            except ServerDied:
                raise
            except Exception as exc:
                error = getattr(exc, "error", None)
                code, message = getattr(error, "code", None), str(getattr(error, "message", exc))
                if code is not None and code != CONNECTION_CLOSED:
                    raise McpError(f"the server refused the call: {message}") from None
                if code == CONNECTION_CLOSED and "byte limit" in message:  # the SDK refused one event
                    raise McpError(
                        f"the result is larger than {self.event_bytes:,} bytes, more than RYSH_MCP_RESULT_CHARS "
                        "lets through: it was not read; ask for less"
                    ) from None
                self._mark_dead(server, _describe(exc))
                raise ServerDied(_describe(exc)) from None

    def _mark_dead(self, server: _Server, why: str) -> None:
        server.session, server.error = None, why
        if self.loop is not None and server.stop is not None:
            self.loop.call_soon_threadsafe(server.stop.set)

    def stop(self, name: str | None = None) -> None:
        """Close one server, or all of them and the loop (the pass ended, or the run let go)."""
        names = [name] if name else list(self.servers)
        loop = self.loop
        if loop is None:
            if not name:
                self.servers.clear()
            return

        async def end() -> None:
            tasks = []
            for each in names:
                server = self.servers.get(each)
                if server and server.task and not server.task.done():
                    server.stop.set()
                    tasks.append(server.task)
            if tasks:
                _done, pending = await asyncio.wait(tasks, timeout=8)
                for task in pending:
                    task.cancel()
                if pending:
                    await asyncio.wait(pending, timeout=4)

        try:
            self._run(end(), 15)
        except Exception:  # never let a stop break the pass's end
            log.warning("MCP servers did not all stop cleanly", exc_info=True)
        if not name:
            self.servers.clear()
            loop.call_soon_threadsafe(loop.stop)
            if self.thread:
                self.thread.join(5)
            self.loop, self.thread = None, None


def list_server_tools(
    config: ServerConfig, *, timeout: float = 20, path: str = "/usr/bin:/bin"
) -> tuple[list[ListedTool], list[str]]:
    """Connect, list, close (the MCP page's Test): (tools, problems) or raises McpError."""
    hub = McpHub([config], connect_timeout=timeout, path=path)
    try:
        server = hub.start(config.name)
        if server.session is None:
            raise McpError(server.error or "could not connect")
        return list(server.tools), list(server.problems)
    finally:
        hub.stop()


# -- the tools port ------------------------------------------------------------------------


class McpTools(ToolsWrapper):
    """A recipe's own tools and its MCP servers' tools, as one tools port. Its own notes, room and
    deadline (both handed on to the inner port); every other hook is the inner port's."""

    def __init__(
        self,
        inner: ToolsPort,
        configs: list[ServerConfig],
        *,
        allowed: dict[str, tuple[str, ...] | None],
        call_timeout: float = 60,
        connect_timeout: float = 20,
        result_chars: int = 100_000,
        path: str = "/usr/bin:/bin",
        cancelled: Callable[[], str | None] = lambda: None,
        on_listed: Callable[[str, list[ListedTool], str, str], None] | None = None,
        notes: list[str] | None = None,
    ):
        super().__init__(inner)
        self.hub = McpHub(
            configs, connect_timeout=connect_timeout, path=path, event_bytes=sse_event_limit(result_chars)
        )
        self.allowed = allowed
        self.call_timeout = call_timeout
        self.result_chars = result_chars
        self.cancelled = cancelled
        self.on_listed = on_listed
        self._notes = [*inner.notes, *(notes or [])]
        self._room: int | None = None
        self._deadline: float | None = None
        self._specs: list[dict] | None = None
        self._reported: set[str] = set()

    @property
    def notes(self) -> list[str]:
        """The inner port's notes when this port was made, then the servers' (said once each)."""
        return self._notes

    @property
    def room_chars(self) -> int | None:
        return self._room

    @room_chars.setter
    def room_chars(self, chars: int | None) -> None:
        self._room = chars
        self.inner.room_chars = chars

    @property
    def deadline(self) -> float | None:
        return self._deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._deadline = value
        self.inner.deadline = value

    # the servers live for the pass
    def _open_all(self) -> list[dict]:
        if self._specs is not None:
            return self._specs
        specs = []
        for name in self.hub.configs:
            server = self.hub.open(name)
            if server.session is None:
                error = server.error or "could not connect"
                self._note(f"MCP server {name}: not available this pass ({error})")
                self._listed(name, [], "", error)
                continue
            self._listed(name, server.tools, "; ".join(server.problems), "")
            wanted = self.allowed.get(name)
            for tool in server.tools:
                if wanted is not None and tool.name not in wanted:
                    continue
                full = f"{name}{SEPARATOR}{tool.name}"
                if not TOOL_NAME_RE.match(full):
                    self._note(f"MCP server {name}: tool {tool.name!r} left out (its name cannot be a tool name)")
                    continue
                description = f"[MCP server {name}] {tool.description}".strip()
                specs.append({"name": full, "description": description[:4000], "input_schema": tool.input_schema})
            for problem in server.problems:
                self._note(f"MCP server {name}: {problem}")
        self._specs = specs
        return specs

    def _listed(self, name: str, tools: list[ListedTool], problems: str, error: str) -> None:
        """Tell the caller what a server listed at a pass's start, or why it did not start."""
        if self.on_listed is not None:
            with contextlib.suppress(Exception):
                self.on_listed(name, tools, problems, error)

    def _note(self, text: str) -> None:
        if text not in self._reported:
            self._reported.add(text)
            self.notes.append(text)

    def specs(self) -> list[dict[str, Any]]:
        return [*self.inner.specs(), *self._open_all()]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        server_name, sep, tool = name.partition(SEPARATOR)
        if not sep or server_name not in self.hub.configs:
            return self.inner.call(name, arguments)
        if not isinstance(arguments, dict):
            return ToolResult(f"{name}: arguments must be an object", is_error=True)
        if name not in {s["name"] for s in self._open_all()}:
            return ToolResult(f"unknown tool {name!r}", is_error=True)
        seconds = self.call_timeout
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left < 1:
                return ToolResult(f"{name}: not run: this leg's time is up", is_error=True)
            seconds = min(seconds, left)
        server = self.hub.servers.get(server_name)
        if server is None or server.session is None:
            return self._down(name, server_name)
        try:
            result = self.hub.call(server_name, tool, arguments, seconds, self.cancelled)
        except TimeoutError:
            return ToolResult(f"{name}: no answer within {int(seconds)}s; the call was abandoned", is_error=True)
        except ServerDied as exc:
            return self._died(name, server_name, str(exc))
        except McpError as exc:
            return ToolResult(f"{name}: {exc}", is_error=True)
        except Exception as exc:  # anything else the SDK raises: a tool error, never a crashed pass
            return ToolResult(f"{name}: the call failed: {_describe(exc)}", is_error=True)
        return self._result(name, result)

    def _down(self, name: str, server_name: str) -> ToolResult:
        server = self.hub.servers.get(server_name)
        why = server.error if server else "not started"
        return ToolResult(f"{name}: the MCP server {server_name} is not available ({why})", is_error=True)

    def _died(self, name: str, server_name: str, why: str) -> ToolResult:
        """A server that died is restarted once for the pass; a second death is reported."""
        server = self.hub.servers[server_name]
        if server.starts < 2:
            self.hub.stop(server_name)
            restarted = self.hub.start(server_name)
            if restarted.session is not None:
                self._note(f"MCP server {server_name}: died ({why}); restarted once for this pass")
                return ToolResult(
                    f"{name}: the MCP server {server_name} died during the call ({why}); whether the call took "
                    "effect is unknown. The server was restarted: you may try again.",
                    is_error=True,
                )
            self._note(
                f"MCP server {server_name}: died ({why}) and could not be restarted ({restarted.error}); "
                "its tools are unavailable for the rest of the pass"
            )
            return ToolResult(
                f"{name}: the MCP server {server_name} died during the call ({why}); whether the call took effect "
                "is unknown. It could not be restarted: its tools are unavailable for the rest of this pass",
                is_error=True,
            )
        self._note(f"MCP server {server_name}: died again ({why}); its tools are unavailable for the rest of the pass")
        return ToolResult(
            f"{name}: the MCP server {server_name} died again ({why}); its tools are unavailable for the rest "
            "of this pass",
            is_error=True,
        )

    def _result(self, name: str, result) -> ToolResult:
        """Texts and images in the server's order, counted together (an image by its base64
        characters) against RYSH_MCP_RESULT_CHARS and the room the budget has left: an image
        past them is left out and said in its place, a text past them is cut with the marker
        of the limit that cut it."""
        limit, why = self._limit()
        texts, images, used = [], [], 0
        for piece in _pieces(result):
            if isinstance(piece, dict):
                if used + len(piece["data"]) <= limit:
                    images.append({**piece, "at": _joined_length(texts)})
                    used += len(piece["data"])
                    continue
                piece = f"[{piece['media_type']} image of {len(piece['data']) * 3 // 4 // 1024:,} KB left out: {why}]"
            texts.append(piece)
            used += len(piece) + 1
        text = "\n".join(texts) or ("(no content)" if not images else "")
        room = limit - sum(len(image["data"]) for image in images)
        if len(text) > room:
            text = text[:room] + "\n" + cut_marker(len(text), room, CAP_CUT if why == CAP_WHY else BUDGET_CUT)
        is_error = bool(getattr(result, "is_error", None) or getattr(result, "isError", False))
        return ToolResult(text, is_error=is_error, images=images)

    def _limit(self) -> tuple[int, str]:
        """The characters a result may have, and what limits it."""
        if self._room is not None and self._room < self.result_chars:
            return self._room, "past the room the budget has left"
        return self.result_chars, CAP_WHY

    # approvals: a gate on an MCP tool may match its text arguments (`tracker__add_comment:*urgent*`)
    def approval_subjects(self, name: str, arguments: dict) -> list[str]:
        if name.partition(SEPARATOR)[0] in self.hub.configs:
            return [v for v in arguments.values() if isinstance(v, str)]
        return self.inner.approval_subjects(name, arguments)

    def approval_equivalents(self, name: str, arguments: dict) -> list[tuple[str, list[str]]]:
        """An MCP tool's call is gated as itself; the inner port's as the inner port says."""
        if name.partition(SEPARATOR)[0] in self.hub.configs:
            return [(name, self.approval_subjects(name, arguments))]
        return self.inner.approval_equivalents(name, arguments)

    # the engine's hooks
    def pass_ended(self, number: int) -> None:
        self.stop_servers()
        self.inner.pass_ended(number)

    def stop_servers(self) -> None:
        self.hub.stop()
        self._specs = None

    def close(self) -> None:
        self.stop_servers()
        self.inner.close()
