"""/mcp/: the dashboard as an MCP server (streamable HTTP, the official `mcp` SDK's MCPServer,
stateless with JSON answers), so a person drives their loops from the MCP clients they already
use (docs/mcp-server.md).

Every request needs `Authorization: Bearer <token>`, an API token checked exactly as the REST
API checks it (`token_check`: revocation, expiry, a deactivated owner, the rate limit, last use);
without one the answer is 401 before the SDK sees the request. Each tool then asks for its scope
and its owner's role (`acting_as`, the API's own rule) and calls the same functions the API's
endpoints call, inside the API's audit context: rows name `<owner> via API token <name>`, source
API. A refusal is a tool error that names the scope or the role.

rysh_site/asgi.py routes /mcp and /mcp/… here, everything else to Django. Daphne passes no ASGI
lifespan, so the SDK's session manager (its task group) is started here on the first request and
lives as long as the process.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from api.models import ApiToken
from api.views import evals as eval_views
from api.views import forks as fork_views
from api.views import recipes as recipe_views
from api.views import runs as run_views
from api.views.common import ApiError, acting_as, token_check
from catalogue.selectors import recipe_catalogue
from catalogue.spec import Kind
from runs import services
from rysh_site import __version__
from rysh_site.proxies import forwarded_client

PATH = "/mcp"
CODING = "coding"  # the recipes with a working copy (`workdir:`), whatever their kind


@dataclass(frozen=True)
class Caller:
    token: ApiToken
    address: str | None


_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("mcp_caller", default=None)

server = MCPServer(
    name="rysh",
    title="rysh dashboard",
    version=__version__,
    instructions=(
        "Drive rysh's budgeted agent loops: list recipes, read a recipe's plan and worst case, "
        "start a run (dry-run first), read a run's status, stop or continue it; fork a run from one of its "
        "passes (dry-run first) and compare two runs of a recipe; run a recipe's eval "
        "suite (dry-run first) and read its results. Each tool needs a scope on your API token (read "
        "or operate) and a role that allows it."
    ),
)


def _as_token(scope: str, work: Callable[[Any], Any], action: str | None = None) -> Any:
    """`work(owner)` as the calling token's owner, in the API's audit context; any refusal is a
    ToolError naming why (the scope, the role, no such recipe or run, a run that cannot…)."""
    caller = _caller.get()
    if caller is None:  # only reachable if the ASGI wrapper below was bypassed
        raise ToolError("send an API token: `Authorization: Bearer <token>`")
    try:
        with acting_as(caller.token, scope, address=caller.address, action=action) as owner:
            return work(owner)
    except ApiError as exc:
        raise ToolError("; ".join(_said(e) for e in exc.errors)) from None
    except Http404 as exc:
        raise ToolError(f"not found: {exc}" if str(exc) else "not found") from None


def _said(error: dict) -> str:
    return f"{error['field']}: {error['message']}" if error.get("field") else error["message"]


async def _call(scope: str, work: Callable[[Any], Any], action: str | None = None) -> Any:
    """The sync services on Django's thread (thread-sensitive), old connections closed around it;
    the caller is read here, in the request's own context, and carried into the thread. `action`:
    a role check other than the scope's (acting_as)."""
    caller = _caller.get()

    def run():
        reset = _caller.set(caller)
        try:
            return _jsonable(_as_token(scope, work, action))
        finally:
            _caller.reset(reset)

    return await database_sync_to_async(run)()


def _jsonable(value: Any) -> Any:
    """Dates and decimals as the REST API writes them (ISO strings)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


@server.tool()
async def list_recipes(kind: Kind | Literal["coding"] | None = None, q: str = "") -> dict:
    """The recipes of the catalogue: kind, name, description, whether runnable, and the plan
    figures computed at sync. `kind` narrows to web, task, code, or coding (every recipe with a
    working copy); `q` searches names and descriptions. Scope: read."""
    return await _call("read", lambda owner: _recipes_of(kind or "", q))


def _recipes_of(kind: str, q: str) -> dict:
    if kind != CODING:
        return recipe_views.recipe_list_of(kind=kind, q=q)
    coding = {(recipe.kind, recipe.name) for recipe in recipe_catalogue(q=q) if _has_working_copy(recipe)}
    listed = recipe_views.recipe_list_of(q=q)["recipes"]
    return {"recipes": [r for r in listed if (r["kind"], r["name"]) in coding]}


def _has_working_copy(recipe) -> bool:
    shown = recipe.good or recipe.latest
    return bool(shown and (shown.spec or {}).get("workdir"))


@server.tool()
async def recipe_plan(kind: Kind, name: str) -> dict:
    """One recipe's plan: its plan lines, its worst case (tokens, dollars, models), the quota lines
    for a run you would start, its model notes and warnings; a broken newest version's errors.
    Scope: read."""
    return await _call("read", lambda owner: recipe_views.recipe_detail(kind=kind, name=name, owner=owner))


@server.tool()
async def start_run(
    kind: Kind, name: str, args: list[str] | None = None, dry_run: bool = True, workdir: str | None = None
) -> dict:
    """Start a run of a catalogue recipe (`auto <kind> run NAME ARGS…`). With `dry_run` (the
    default) the answer is the preview — prompt, plan, quotas — and nothing changes; call again
    with `dry_run: false` to start it for real, which answers the queued run. `workdir`: a code
    recipe's agent works in this folder of the repository (`--workdir`). Scope: operate."""
    payload = run_views.StartIn(kind=kind, name=name, args=args or [], dry_run=dry_run, workdir=workdir)
    return await _call("operate", lambda owner: run_views.start(payload, owner=owner))


@server.tool()
async def run_status(run_id: int) -> dict:
    """A run: state, cause, passes with their verdicts and reasons, tokens and cost, and the
    controls that apply now. Scope: read."""
    return await _call("read", lambda owner: run_views.run_detail(run_views.run_of(run_id)))


@server.tool()
async def stop_run(run_id: int) -> dict:
    """Stop a run gracefully: the pass in flight finishes, is not judged, the run ends.
    Scope: operate."""
    return await _call("operate", lambda owner: run_views.control(run_id, services.run_stop, owner=owner))


@server.tool()
async def continue_run(run_id: int) -> dict:
    """A paused run picks up from its checkpoint. Scope: operate."""
    return await _call("operate", lambda owner: run_views.control(run_id, services.run_continue, owner=owner))


@server.tool()
async def fork_run(
    run_id: int,
    pass_number: int,
    redo: bool = False,
    prompt: str | None = None,
    iterate_with: str | None = None,
    until: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    budget: str | None = None,
    dry_run: bool = True,
) -> dict:
    """Fork a run from the end of its pass `pass_number` (`auto <kind> fork NAME --run ID --pass N`):
    a new run of the same recipe version starting from that pass's results, working copy, verdict
    and iterate_with, going on with the next pass; `redo`: pass `pass_number` again, from the end
    of the one before. The edits (prompt, iterate_with, until, model, effort, budget such as "2b")
    replace the parent's; left out, they stay. With `dry_run` (the default) the answer is the plan
    — where it starts, the fork's worst case, what the parent spent up to there (not paid again) —
    and nothing is started; call again with `dry_run: false` to start it. Scope: operate."""
    payload = fork_views.ForkIn(
        pass_number=pass_number,
        redo=redo,
        prompt=prompt,
        iterate_with=iterate_with,
        until=until,
        model=model,
        effort=effort,
        budget=budget,
        dry_run=dry_run,
    )
    return await _call("operate", lambda owner: fork_views.fork_of(run_id, payload, owner=owner))


@server.tool()
async def compare_runs(run_a: int, run_b: int | None = None) -> dict:
    """Two runs of one recipe side by side (`auto <kind> compare A B`): per pass verdict, tokens,
    $, time and diff stat; the final results and diffs compared; the prompt edits between them.
    Without `run_b`, `run_a` is a fork and is compared with the run it was forked from.
    Scope: read."""

    def read(owner) -> dict:
        if run_b is not None:
            return fork_views.compare_of(run_a, run_b)
        parent = run_views.run_of(run_a).forked_from_id
        if parent is None:
            raise ApiError(400, f"run #{run_a} is not a fork: give run_b, the run to compare it with", field="run_b")
        return fork_views.compare_of(run_a, parent)

    return await _call("read", read)


@server.tool()
async def start_eval(
    kind: Kind, name: str, case: str | None = None, dry_run: bool = True, change_id: int | None = None
) -> dict:
    """Run a recipe's eval cases (`auto eval RECIPE`): every case a real run under the suite's hard
    ceiling (the cases' worst cases summed), graded against its expect.yaml and judge.md. With
    `dry_run` (the default) the answer is the plan — each case's worst case, the broken cases with
    their errors, the ceiling — and nothing is spent; call again with `dry_run: false` to start it,
    which answers the suite (read it later with eval_results). `case`: only that case.
    `change_id`: a change request's suites instead, its branch and main side by side (kind and
    name are then the change's recipe). Scope: operate; your role must be editor or admin."""
    if change_id is not None:
        payload = eval_views.ChangeEvalsIn(dry_run=dry_run)
        return await _call(
            "operate",
            lambda owner: eval_views.change_evals_start(change_id=change_id, payload=payload, owner=owner),
            "edit",
        )
    payload = eval_views.EvalStartIn(case=case, dry_run=dry_run)
    return await _call(
        "operate", lambda owner: eval_views.eval_start(kind=kind, name=name, payload=payload, owner=owner), "edit"
    )


@server.tool()
async def eval_results(suite_id: int | None = None, kind: Kind | None = None, name: str | None = None) -> dict:
    """An eval suite's results: its state and outcome (running, passed, failed, ceiling), pass
    rate, tokens and cost, and per case pass or fail, each failed assertion and what broke it,
    the rubric's verdict, the case's run. `suite_id`, or `kind` and `name` for the recipe's newest
    suite. Scope: read."""

    def read(owner) -> dict:
        if suite_id is not None:
            return eval_views.suite_detail(eval_views.suite_of(suite_id))
        if not kind or not name:
            raise ApiError(400, "give suite_id, or kind and name for the recipe's newest suite", field="suite_id")
        return eval_views.suite_detail(eval_views.latest_suite(target=f"{kind}/{name}"))

    return await _call("read", read)


# The transport: stateless (no session to keep between requests), JSON answers (no SSE stream).
# The Host/Origin check of the SDK is for servers without authentication on localhost; here every
# request carries a Bearer token, which a browser on another origin cannot send for the user.
# Its Starlette app is not used (asgi.py routes to `application` below); building it makes the
# session manager, which `application` hands each request to.
server.streamable_http_app(
    json_response=True,
    stateless_http=True,
    transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
)
sessions = server.session_manager
_started = asyncio.Event()
_starting = asyncio.Lock()


async def _run_sessions() -> None:
    async with sessions.run():
        _started.set()
        await anyio.sleep_forever()


async def _ensure_started() -> None:
    if _started.is_set():
        return
    async with _starting:
        if not _started.is_set():
            # its own empty context: the manager's tasks must not inherit this first caller
            asyncio.get_running_loop().create_task(_run_sessions(), context=contextvars.Context())
            await _started.wait()


def _header(scope: dict, name: bytes) -> str:
    return b", ".join(v for k, v in scope.get("headers", ()) if k.lower() == name).decode("latin-1")


def _address(scope: dict) -> str | None:
    client = scope.get("client") or ("", 0)
    found = forwarded_client(client[0] or "", _header(scope, b"x-forwarded-for"), settings.RYSH_TRUSTED_PROXIES)
    return str(found) if found is not None else None


async def _refuse(send, error: ApiError) -> None:
    body = json.dumps({**error.errors[0], "errors": error.errors}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in error.headers.items()]
    if error.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="rysh"'))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def application(scope, receive, send) -> None:
    """The ASGI app at /mcp/: the token first (401/429 as the REST API answers), then the SDK."""
    scheme, _, secret = _header(scope, b"authorization").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        await _refuse(send, ApiError(401, "send an API token: `Authorization: Bearer <token>`", field="Authorization"))
        return
    try:
        token = await database_sync_to_async(token_check)(secret.strip())
    except ApiError as exc:
        await _refuse(send, exc)
        return
    if scope.get("method") == "GET":  # stateless, JSON answers: there is no stream to open
        await _refuse(send, ApiError(405, "this endpoint answers POST only (no SSE stream)", headers={"Allow": "POST"}))
        return
    await _ensure_started()
    reset = _caller.set(Caller(token=token, address=_address(scope)))
    try:
        await sessions.handle_request(scope, receive, send)
    finally:
        _caller.reset(reset)


def is_mcp_path(path: str) -> bool:
    return path == PATH or path.startswith(PATH + "/")
