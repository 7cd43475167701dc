"""todo and sub_agent's arguments (agents.agent_tools): what they accept, what they refuse, and
which agent is offered which."""

import pytest

from agents.agent_tools import MAX_DEPTH, TODO_MAX_ITEMS, AgentTools, Delegation, delegation_of, todo_items
from agents.ports import ToolResult, Tools


class Inner(Tools):
    def __init__(self):
        self.calls = []

    def specs(self):
        return [{"name": n, "description": n, "input_schema": {}} for n in ("bash", "file_read", "save_result")]

    def call(self, name, arguments):
        self.calls.append(name)
        return ToolResult(f"{name} ran")


def names(tools):
    return [s["name"] for s in tools.specs()]


def test_todo_replaces_the_list_and_refuses_past_its_cap():
    saved = []
    tools = AgentTools(Inner(), todo_saved=saved.append)
    items = [{"text": "read", "status": "done"}, {"text": "write", "status": "pending"}]
    assert tools.call("todo", {"items": items}).content == "todo: 2 item(s) saved, 1 done"
    assert tools.call("todo", {"items": items[:1]}).content == "todo: 1 item(s) saved, 1 done"
    assert saved == [items, items[:1]]
    too_many = tools.call("todo", {"items": items * TODO_MAX_ITEMS})
    assert too_many.is_error and f"{2 * TODO_MAX_ITEMS} items is more than the {TODO_MAX_ITEMS}" in too_many.content
    assert len(saved) == 2  # a refused list changes nothing


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "`items` must be a list"),
        ({"items": [{"text": "", "status": "done"}]}, "item 1: `text` must be a non-empty text"),
        (
            {"items": [{"text": "x", "status": "completed"}]},
            "item 1: `status` must be one of pending, in_progress, done",
        ),
        ({"items": [{"text": "x" * 201, "status": "done"}]}, "item 1: 201 characters is more than 200"),
    ],
)
def test_bad_todo_items_say_what_is_wrong(arguments, said):
    assert said in todo_items(arguments)


def test_sub_agent_is_offered_only_with_a_delegate_and_below_the_last_depth():
    tools = AgentTools(Inner(), todo_saved=lambda items: None, sub_agents=True)
    assert names(tools) == ["bash", "file_read", "save_result", "todo"]
    tools.delegate = lambda request: ToolResult("ran")
    assert names(tools)[-1] == "sub_agent"
    deepest = AgentTools(Inner(), sub_agents=True, depth=MAX_DEPTH)
    deepest.delegate = lambda request: ToolResult("ran")
    assert "sub_agent" not in names(deepest)
    assert deepest.call("sub_agent", {"task": "x"}).content.startswith("unknown tool 'sub_agent'")


def test_a_sub_agent_s_port_has_only_the_tools_it_was_given():
    inner = Inner()
    tools = AgentTools(inner, only=frozenset({"file_read"}))
    assert names(tools) == ["file_read"]
    assert tools.call("bash", {"command": "rm -rf ."}).is_error and inner.calls == []
    assert tools.call("file_read", {"path": "a"}).content == "file_read ran"


def test_a_valid_request_names_its_tools_budget_and_depth():
    offered = ["bash", "file_read", "todo", "sub_agent"]
    assert delegation_of({"task": " Fix it. ", "tools": ["bash"], "budget": "20p"}, offered, depth=1) == Delegation(
        "Fix it.", ("bash",), 20_000, 1
    )
    every = delegation_of({"task": "x", "budget": 5000}, offered, depth=1)
    assert every.tools == ("bash", "file_read", "sub_agent") and every.budget == 5000  # never the run's todo
    assert delegation_of({"task": "x", "budget": "12000"}, offered, depth=1).budget == 12_000  # a number is tokens
    assert delegation_of({"task": "x"}, offered, depth=2).tools == ("bash", "file_read")  # none below depth 2


@pytest.mark.parametrize(
    ("arguments", "depth", "said"),
    [
        ({"task": ""}, 1, "`task` must be a non-empty text"),
        ({"task": "x", "tools": ["http_get"]}, 1, "names 'http_get', which you do not have to give"),
        ({"task": "x", "tools": ["sub_agent"]}, 2, "a sub-agent at depth 2 cannot start sub-agents"),
        ({"task": "x", "budget": "lots"}, 1, "`budget`: expected"),
        ({"task": "x", "budget": -5}, 1, "`budget` must be more than zero tokens"),
    ],
)
def test_bad_requests_are_refused_before_anything_starts(arguments, depth, said):
    refused = delegation_of(arguments, ["bash", "sub_agent"], depth=depth)
    assert isinstance(refused, ToolResult) and refused.is_error
    assert said in refused.content and refused.content.endswith("no sub-agent was started")
