"""The MCP server's eval tools (api/views/mcp_server.py, docs/mcp-server.md, docs/evals.md):
`start_eval` (a dry run by default, like start_run) and `eval_results`, driven with the official
SDK's streamable-HTTP client and an API token, against the server's own ASGI app in this process
(httpx's ASGI transport; the session manager lives on one event loop for the module)."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from django.contrib.auth.models import Group, User
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from api.services import token_create
from api.views import mcp_server
from evals import services
from evals.models import CaseResult, CaseState, Suite, SuiteState
from tests.conftest import ONE_PASS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def loop():
    """One event loop for the module, in a thread of its own: the SDK's session manager starts on
    the first request and lives as long as its loop (as it lives as long as daphne's)."""
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    yield running
    running.call_soon_threadsafe(running.stop)
    thread.join(5)


def session(loop, secret: str, calls):
    async def main():
        transport = httpx.ASGITransport(app=mcp_server.application)
        headers = {"Authorization": f"Bearer {secret}"}
        http = httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers, timeout=30)
        async with http, streamable_http_client("http://testserver/mcp/", http_client=http) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                return await calls(mcp)

    return asyncio.run_coroutine_threadsafe(main(), loop).result(60)


def token(role: str, *scopes: str) -> str:
    user = User.objects.filter(username=f"mcp-{role}").first()
    if user is None:
        user = User.objects.create_user(f"mcp-{role}")
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return token_create(owner=user, name="claude", scopes=list(scopes), days=7, by=user).secret


def answer(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def refusal(result) -> str:
    assert result.is_error
    return result.content[0].text


@pytest.fixture
def job(catalogued):
    return catalogued(ONE_PASS)


def graded_suite() -> Suite:
    suite = Suite.objects.create(target="task/job", side="main", state=SuiteState.DONE, tokens_counted=321)
    CaseResult.objects.create(suite=suite, name="passes", folder="tasks/job/evals/passes", state=CaseState.PASSED)
    CaseResult.objects.create(
        suite=suite,
        name="fails",
        folder="tasks/job/evals/fails",
        state=CaseState.FAILED,
        failures=[{"assertion": "output_matches", "message": "no match for /All saved/ in the final answer"}],
    )
    return suite


def test_start_eval_is_a_dry_run_by_default_then_starts_as_the_tokens_owner(loop, job, monkeypatch):
    asked = []

    def plan(**kwargs):
        asked.append(("plan", kwargs))
        return services.SuitePlan(target="task/job", side="main", commit_sha="abc", recipe_text="", budget_tokens=99)

    def start(**kwargs):
        asked.append(("start", kwargs["user"].get_username(), kwargs["case"]))
        suite = Suite.objects.create(target="task/job", side="main", user=kwargs["user"])
        CaseResult.objects.create(suite=suite, name="passes", folder="tasks/job/evals/passes")
        return suite

    monkeypatch.setattr(services, "suite_plan", plan)
    monkeypatch.setattr(services, "suite_start", start)
    secret = token("editor", "operate")

    async def calls(mcp: ClientSession):
        tools = {t.name for t in (await mcp.list_tools()).tools}
        dry = answer(await mcp.call_tool("start_eval", {"kind": "task", "name": "job"}))
        real = answer(
            await mcp.call_tool("start_eval", {"kind": "task", "name": "job", "case": "passes", "dry_run": False})
        )
        return tools, dry, real

    tools, dry, real = session(loop, secret, calls)
    assert {"start_eval", "eval_results"} <= tools
    assert dry["dry_run"] is True and dry["plan"]["budget_tokens"] == 99
    assert real["dry_run"] is False and real["suite"]["state"] == "running"
    assert real["suite"]["cases"][0]["name"] == "passes" and real["suite"]["started_by"] == "mcp-editor"
    assert asked[0][0] == "plan" and asked[1] == ("start", "mcp-editor", "passes")


def test_eval_results_reads_a_suite_or_the_recipes_newest(loop, job):
    suite = graded_suite()
    secret = token("viewer", "read")

    async def calls(mcp: ClientSession):
        by_id = answer(await mcp.call_tool("eval_results", {"suite_id": suite.pk}))
        newest = answer(await mcp.call_tool("eval_results", {"kind": "task", "name": "job"}))
        neither = refusal(await mcp.call_tool("eval_results", {}))
        missing = refusal(await mcp.call_tool("eval_results", {"suite_id": 999999}))
        none_yet = refusal(await mcp.call_tool("eval_results", {"kind": "task", "name": "other"}))
        return by_id, newest, neither, missing, none_yet

    by_id, newest, neither, missing, none_yet = session(loop, secret, calls)
    assert by_id == newest and by_id["id"] == suite.pk and by_id["outcome"] == "failed"
    cases = {c["name"]: c for c in by_id["cases"]}
    assert cases["passes"]["passed"] is True and cases["fails"]["passed"] is False
    assert cases["fails"]["failures"][0]["message"] == "no match for /All saved/ in the final answer"
    assert "give suite_id, or kind and name" in neither
    assert "not found" in missing
    assert "task/other has no eval suite yet" in none_yet


def test_starting_a_suite_needs_the_operate_scope_and_an_editor_or_admin(loop, job):
    async def start(mcp: ClientSession):
        return refusal(await mcp.call_tool("start_eval", {"kind": "task", "name": "job"}))

    assert 'lacks the "operate" scope' in session(loop, token("editor", "read"), start)
    said = session(loop, token("operator", "operate"), start)
    assert "mcp-operator's role (operator) cannot edit" in said and "editor" in said


def test_a_refusal_is_a_tool_error_with_its_message_and_nothing_started(loop, job, monkeypatch):
    def refuse(**kwargs):
        raise services.SuiteRefused("tasks/job/evals/bad/expect.yaml:3: output_matches: regex does not compile")

    monkeypatch.setattr(services, "suite_start", refuse)

    async def calls(mcp: ClientSession):
        return refusal(await mcp.call_tool("start_eval", {"kind": "task", "name": "job", "dry_run": False}))

    said = session(loop, token("admin", "operate"), calls)
    assert said.endswith(": suite: tasks/job/evals/bad/expect.yaml:3: output_matches: regex does not compile")
    assert not Suite.objects.exists()
