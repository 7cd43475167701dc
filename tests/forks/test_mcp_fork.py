"""The MCP server's fork_run and compare_runs, called with the official SDK's own client on the
server in process (the transport, the token check at the door and the listing of every tool are
tests/mcp_server/test_mcp_server.py's, on a real daphne). The caller is an API token, as the door
sets it; fork_plan and run_fork are stand-ins recording what was asked, the comparison is real."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth.models import Group, User
from mcp import Client

from api.services import token_create
from api.views import mcp_server
from runs import forks, services
from runs.models import Run
from tests.conftest import drive
from tests.fake_model import FakeModel

pytestmark = pytest.mark.django_db(transaction=True)  # the tools read the database on another thread

LOOP = """
    ---
    loop:
      do:
        budget: 20p
      while:
        max_iterations: 3
        prompts:
          until: The note is saved.
    ---
    Save a note.
"""


def token(role: str, *scopes: str):
    user = User.objects.create_user(f"mcp-{role}-{'-'.join(scopes)}")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return token_create(owner=user, name="claude", scopes=list(scopes), days=7, by=user).token


def call(token, tool: str, arguments: dict):
    """One tool call as `token`'s caller: (is_error, the answer's JSON or its text)."""

    async def main():
        reset = mcp_server._caller.set(mcp_server.Caller(token=token, address="127.0.0.1"))
        try:
            async with Client(mcp_server.server) as client:
                result = await client.call_tool(tool, arguments)
        finally:
            mcp_server._caller.reset(reset)
        text = result.content[0].text
        return result.is_error, text if result.is_error else json.loads(text)

    with ThreadPoolExecutor(max_workers=1) as pool:  # asyncio.run refuses a thread with a loop running
        return pool.submit(asyncio.run, main()).result()


@pytest.fixture
def parent(catalogued):
    catalogued(LOOP)
    run = services.run_start(kind="task", name_or_path="job", args=[], provider="scripted", catalogue_only=True)
    return drive(run, FakeModel(judge=["NO\nnot yet"] * 3))


@pytest.fixture
def asked(monkeypatch):
    seen = []

    def plan(*, run, pass_number, redo=False, edits=None, target=None):
        seen.append(("plan", pass_number, edits))
        if pass_number > run.pass_number:
            raise forks.ForkRefused(f"run #{run.pk} has no pass {pass_number}", field="pass_number")
        return forks.ForkPlan(parent=run, from_pass=pass_number, redo=redo, recipe_text="x", worst_tokens=40_000)

    def fork(*, run, pass_number, user, redo=False, edits=None, provider=None, target=None):
        seen.append(("fork", pass_number, user.get_username()))
        new = services.run_start(kind="task", name_or_path="job", args=[], provider="scripted", user=user)
        Run.objects.filter(pk=new.pk).update(forked_from=run, fork_pass=pass_number, fork_edits=edits.edited())
        new.refresh_from_db()
        return new

    monkeypatch.setattr(forks, "fork_plan", plan)
    monkeypatch.setattr(forks, "run_fork", fork)
    return seen


def test_fork_run_is_a_dry_run_unless_asked_and_then_starts_the_fork(parent, asked):
    operate = token("operator", "operate")
    failed, dry = call(operate, "fork_run", {"run_id": parent.pk, "pass_number": 2, "prompt": "Save it well."})
    assert not failed and dry["dry_run"] is True and dry["plan"]["from_pass"] == 2
    assert Run.objects.count() == 1
    failed, real = call(operate, "fork_run", {"run_id": parent.pk, "pass_number": 2, "dry_run": False})
    assert not failed and real["dry_run"] is False and real["forked_from"] == parent.pk
    assert asked[-1] == ("fork", 2, "mcp-operator-operate")
    assert Run.objects.get(pk=real["run"]["id"]).forked_from == parent
    assert asked[0][2] == forks.ForkEdits(prompt="Save it well.")


def test_fork_run_refusals_name_the_field_the_scope_or_the_role(parent, asked):
    failed, said = call(token("operator", "operate"), "fork_run", {"run_id": parent.pk, "pass_number": 7})
    assert failed and said.endswith(f"fork_run: pass: run #{parent.pk} has no pass 7")
    failed, said = call(token("operator", "read"), "fork_run", {"run_id": parent.pk, "pass_number": 1})
    assert failed and 'fork_run: scope: this token lacks the "operate" scope' in said
    failed, said = call(token("viewer", "operate"), "fork_run", {"run_id": parent.pk, "pass_number": 1})
    assert failed and "fork_run: role: " in said
    assert [a for a in asked if a[0] == "fork"] == [] and Run.objects.count() == 1


def test_compare_runs_defaults_to_the_forks_parent(parent, asked):
    failed, real = call(token("operator", "operate"), "fork_run", {"run_id": parent.pk, "pass_number": 2, "dry_run": False})  # fmt: skip
    fork = real["run"]["id"]
    reader = token("viewer", "read")
    failed, shown = call(reader, "compare_runs", {"run_a": fork})
    assert not failed and shown["a"]["id"] == fork and shown["b"]["id"] == parent.pk
    assert [row["b"]["verdict"] for row in shown["comparison"]["passes"]] == ["NO", "NO", "NO"]
    failed, said = call(reader, "compare_runs", {"run_a": parent.pk})
    assert failed and said.endswith(f"run_b: run #{parent.pk} is not a fork: give run_b, the run to compare it with")
