"""The dashboard as an MCP server (docs/mcp-server.md): the real ASGI app under daphne (no worker),
driven with the official SDK's own streamable-HTTP client and an API token, on the demo's
catalogue and the offline scripted model."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.e2e.stack import Stack

TOKENS = """
from django.contrib.auth.models import Group, User
from api.services import token_create
def person(name, role):
    user = User.objects.create_user(name)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user
op, viewer = person("mcp-op", "operator"), person("mcp-viewer", "viewer")
made = {
    "operate": token_create(owner=op, name="claude", scopes=["operate"], days=7, by=op),
    "read": token_create(owner=op, name="reader", scopes=["read"], days=7, by=op),
    "viewer": token_create(owner=viewer, name="mine", scopes=["operate"], days=7, by=viewer),
}
print(json.dumps({k: v.secret for k, v in made.items()}))
"""


@pytest.fixture(scope="module")
def live():
    stack = Stack(workers=1)  # the cluster size; no worker is started
    try:
        stack.setup()
        stack.start_web()
        stack.tokens = stack.query(TOKENS)
        yield stack
    finally:
        stack.stop()


def session(live: Stack, token: str, calls):
    """`calls(session)` on an initialized MCP session with `Authorization: Bearer <token>`."""

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, streamable_http_client(f"{live.url}/mcp/", http_client=http) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                return await calls(mcp)

    # in a thread of its own: in the whole suite Playwright's sync API (the e2e tests' browser,
    # session-wide) keeps an event loop running in this one, where asyncio.run() is refused
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


def answer(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def refusal(result) -> str:
    assert result.is_error
    return result.content[0].text


def test_without_a_valid_token_the_endpoint_answers_401(live):
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer rysh_not-a-token"}, {"Authorization": "Basic eDp5"}):
        got = httpx.post(f"{live.url}/mcp/", json=hello, headers=headers)
        assert got.status_code == 401, (headers, got.text)
        assert got.headers["WWW-Authenticate"].startswith("Bearer")
        assert got.json()["field"] == "Authorization"


def test_an_operate_token_lists_plans_dry_runs_starts_reads_and_stops(live):
    async def calls(mcp: ClientSession):
        tools = {t.name for t in (await mcp.list_tools()).tools}
        recipes = answer(await mcp.call_tool("list_recipes", {"kind": "task"}))
        plan = answer(await mcp.call_tool("recipe_plan", {"kind": "task", "name": "reading-list"}))
        dry = answer(await mcp.call_tool("start_run", {"kind": "task", "name": "reading-list", "args": ["owls"]}))
        runs_after_dry = live.query("from runs.models import Run\nprint(Run.objects.count())")
        real = answer(
            await mcp.call_tool(
                "start_run", {"kind": "task", "name": "reading-list", "args": ["owls"], "dry_run": False}
            )
        )
        status = answer(await mcp.call_tool("run_status", {"run_id": real["run"]["id"]}))
        stopped = answer(await mcp.call_tool("stop_run", {"run_id": real["run"]["id"]}))
        missing = refusal(await mcp.call_tool("run_status", {"run_id": 999999}))
        not_paused = refusal(await mcp.call_tool("continue_run", {"run_id": real["run"]["id"]}))
        return tools, recipes, plan, dry, runs_after_dry, real, status, stopped, missing, not_paused

    tools, recipes, plan, dry, runs_after_dry, real, status, stopped, missing, not_paused = session(
        live, live.tokens["operate"], calls
    )
    assert tools == {
        "list_recipes",
        "recipe_plan",
        "start_run",
        "run_status",
        "stop_run",
        "continue_run",
        "start_eval",
        "eval_results",
        "fork_run",
        "compare_runs",
    }
    assert "reading-list" in {r["name"] for r in recipes["recipes"]}
    assert plan["plan_lines"] and plan["worst_case"]["tokens"] > 0 and plan["worst_case"]["text"]
    assert dry["dry_run"] is True and dry["lines"]
    assert runs_after_dry == 0  # the dry run changed nothing
    assert real["dry_run"] is False and real["run"]["name"] == "reading-list" and real["run"]["args"] == ["owls"]
    assert status["id"] == real["run"]["id"] and status["started_by"] == "mcp-op" and "controls" in status
    assert stopped["run"]["id"] == real["run"]["id"] and stopped["message"]
    assert "not found" in missing
    assert (
        "state: run #" in not_paused and "nothing to continue" in not_paused
    )  # continue applies to a paused run only (the API's 409)
    audit = live.query("""
        from audit.models import AuditEntry
        print(json.dumps(sorted({(e.action, e.actor_name, e.source) for e in AuditEntry.objects.filter(
            action__startswith="run.")})))""")
    assert ["run.start", "mcp-op via API token claude", "api"] in audit
    assert any(action != "run.start" and who == "mcp-op via API token claude" for action, who, _ in audit)


def test_a_read_token_reads_but_cannot_start(live):
    async def calls(mcp: ClientSession):
        listed = answer(await mcp.call_tool("list_recipes", {}))
        refused = refusal(await mcp.call_tool("start_run", {"kind": "task", "name": "reading-list", "args": ["x"]}))
        return listed, refused

    listed, refused = session(live, live.tokens["read"], calls)
    assert listed["recipes"]
    assert 'lacks the "operate" scope' in refused and "scope" in refused


def test_a_viewer_s_operate_token_cannot_start_it_names_the_role(live):
    async def calls(mcp: ClientSession):
        return refusal(await mcp.call_tool("start_run", {"kind": "task", "name": "reading-list", "args": ["x"]}))

    refused = session(live, live.tokens["viewer"], calls)
    assert "role: mcp-viewer's role (viewer) cannot operate: it needs the admin or operator role" in refused


def test_it_names_the_dashboard_and_its_version(live):
    from rysh_site import __version__

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {live.tokens['read']}"})
        async with http, streamable_http_client(f"{live.url}/mcp/", http_client=http) as (read, write):
            async with ClientSession(read, write) as mcp:
                return await mcp.initialize()

    with ThreadPoolExecutor(max_workers=1) as pool:
        hello = pool.submit(asyncio.run, main()).result()
    assert (hello.server_info.name, hello.server_info.version) == ("rysh", __version__) and __version__


def test_get_answers_405_as_documented_and_holds_no_stream(live):
    """Stateless, JSON answers: nothing to stream, so GET is refused at once (after the token)."""
    token = {"Authorization": f"Bearer {live.tokens['read']}", "Accept": "text/event-stream"}
    got = httpx.get(f"{live.url}/mcp/", headers=token, timeout=10)
    assert got.status_code == 405 and got.headers["Allow"] == "POST"
    assert httpx.get(f"{live.url}/mcp/", timeout=10).status_code == 401  # the token first, as for every request


def test_list_recipes_takes_the_documented_kinds(live):
    async def calls(mcp: ClientSession):
        coding = answer(await mcp.call_tool("list_recipes", {"kind": "coding"}))
        tasks = answer(await mcp.call_tool("list_recipes", {"kind": "task"}))
        return coding, tasks

    coding, tasks = session(live, live.tokens["read"], calls)
    assert [r["name"] for r in coding["recipes"]] == ["fix-the-test"]  # the demo's recipe with a working copy
    assert "fix-the-test" in {r["name"] for r in tasks["recipes"]} and len(tasks["recipes"]) > 1
