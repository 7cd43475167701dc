"""The tools every run's agent has beside its recipe's (docs/agent-tools.md): `todo`, its short
plan shown on the run page, and on task and coding runs `sub_agent`, a task handed to an agent
with a fresh conversation and a budget carved out of this one's.

`AgentTools` wraps the recipe's tools port. What a sub-agent costs and how it runs is the
engine's business (runs.engine.delegation): this module reads and checks the arguments, and
hands a valid request to the `Delegate` the engine attached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agents.ports import ToolResult, ToolsPort, ToolsWrapper
from budgets.units import UnitError, parse_tokens

TODO_STATUSES = ("pending", "in_progress", "done")
TODO_MAX_ITEMS = 30
TODO_ITEM_CHARS = 200
MAX_DEPTH = 2  # the run's agent is depth 0; a sub-agent at depth 2 cannot start another
TASK_CHARS = 20_000  # the longest task a sub-agent is given

TODO_TOOL = {
    "name": "todo",
    "description": (
        "Write your plan as a short checklist, shown live to the people watching this run. Each call "
        "replaces the whole list: send every item each time, with its status (pending, in_progress, "
        f"done). At most {TODO_MAX_ITEMS} items of {TODO_ITEM_CHARS} characters."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "status": {"type": "string", "enum": list(TODO_STATUSES)},
                    },
                    "required": ["text", "status"],
                },
            }
        },
        "required": ["items"],
    },
}


def sub_agent_spec(tool_names: list[str]) -> dict:
    return {
        "name": "sub_agent",
        "description": (
            "Hand a self-contained task to a sub-agent: it starts with a fresh conversation (it does not "
            "see yours: say everything it needs in `task`), works with its own tool calls and answers "
            "with a final report, which is all that comes back to you. Its budget is taken from what "
            "your own leg has left and held for it before it starts; what it does not spend comes back. "
            "`budget`: tokens (a number) or pages/books ('20p', '1b'); by default half of what you can "
            "give. `tools`: a subset of your tools (by default all of them)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "the goal, the files or facts it needs, what to answer"},
                "tools": {"type": "array", "items": {"type": "string", "enum": tool_names}},
                "budget": {"type": ["integer", "string"], "description": "e.g. 40000 or '40p'"},
            },
            "required": ["task"],
        },
    }


@dataclass(frozen=True)
class Delegation:
    """A valid sub_agent request: its task, the tools it may use, the budget asked (None: the
    default share) and the depth it runs at."""

    task: str
    tools: tuple[str, ...]
    budget: int | None
    depth: int


class Delegate(Protocol):
    def __call__(self, request: Delegation) -> ToolResult: ...


class AgentTools(ToolsWrapper):
    """A tools port with `todo` (when `todo_saved` is given) and `sub_agent` (when a delegate is
    attached and `depth` < MAX_DEPTH) beside `inner`'s tools, or only those of `only`."""

    def __init__(
        self,
        inner: ToolsPort,
        *,
        todo_saved: Callable[[list[dict]], None] | None = None,
        sub_agents: bool = False,
        depth: int = 0,
        only: frozenset[str] | None = None,
    ):
        super().__init__(inner)  # every hook but specs and call forwarded to it
        self.todo_saved = todo_saved
        self.sub_agents = sub_agents and depth < MAX_DEPTH
        self.depth = depth
        self.only = only
        self.delegate: Delegate | None = None  # the engine attaches it (runs.engine.delegation)

    def inner_specs(self) -> list[dict[str, Any]]:
        specs = self.inner.specs()
        return specs if self.only is None else [s for s in specs if s["name"] in self.only]

    def specs(self) -> list[dict[str, Any]]:
        specs = self.inner_specs()
        if self.todo_saved is not None:
            specs.append(TODO_TOOL)
        if self.offers_sub_agent:
            specs.append(sub_agent_spec([s["name"] for s in specs]))
        return specs

    @property
    def offers_sub_agent(self) -> bool:
        return self.sub_agents and self.delegate is not None

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name == "todo" and self.todo_saved is not None:
            return self._todo(arguments)
        if name == "sub_agent" and self.offers_sub_agent:
            request = delegation_of(arguments, [s["name"] for s in self.specs()], depth=self.depth + 1)
            return request if isinstance(request, ToolResult) else self.delegate(request)
        if name == "sub_agent" and self.sub_agents is False and self.depth >= MAX_DEPTH:
            return ToolResult(f"unknown tool 'sub_agent': a sub-agent at depth {self.depth} cannot start one", True)
        if name in ("todo", "sub_agent"):
            return ToolResult(f"unknown tool {name!r}: it is not offered to this agent", is_error=True)
        if self.only is not None and name not in self.only:
            return ToolResult(f"unknown tool {name!r}: this agent has {', '.join(sorted(self.only))}", is_error=True)
        return self.inner.call(name, arguments)

    def _todo(self, arguments: dict[str, Any]) -> ToolResult:
        items = todo_items(arguments)
        if isinstance(items, str):
            return ToolResult(f"todo: {items}; the list was not changed", is_error=True)
        self.todo_saved(items)
        done = sum(1 for item in items if item["status"] == "done")
        return ToolResult(f"todo: {len(items)} item(s) saved, {done} done")


def todo_items(arguments: object) -> list[dict] | str:
    """The todo call's items, checked: [{"text", "status"}], or what is wrong with them."""
    items = arguments.get("items") if isinstance(arguments, dict) else None
    if not isinstance(items, list):
        return "`items` must be a list of {text, status}"
    if len(items) > TODO_MAX_ITEMS:
        return f"{len(items)} items is more than the {TODO_MAX_ITEMS} a list may hold; merge some"
    checked = []
    for n, item in enumerate(items, 1):
        text = item.get("text") if isinstance(item, dict) else None
        status = item.get("status") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            return f"item {n}: `text` must be a non-empty text"
        if len(text) > TODO_ITEM_CHARS:
            return f"item {n}: {len(text)} characters is more than {TODO_ITEM_CHARS}; say it shorter"
        if status not in TODO_STATUSES:
            return f"item {n}: `status` must be one of {', '.join(TODO_STATUSES)}, got {status!r}"
        checked.append({"text": text.strip(), "status": status})
    return checked


def delegation_of(arguments: object, offered: list[str], *, depth: int) -> Delegation | ToolResult:
    """A sub_agent call's arguments checked against the tools its caller has (`offered`)."""

    def refused(why: str) -> ToolResult:
        return ToolResult(f"sub_agent: {why}; no sub-agent was started", is_error=True)

    if not isinstance(arguments, dict):
        return refused("arguments must be an object")
    task = arguments.get("task")
    if not isinstance(task, str) or not task.strip():
        return refused("`task` must be a non-empty text")
    if len(task) > TASK_CHARS:
        return refused(f"`task` is {len(task):,} characters, more than {TASK_CHARS:,}")
    tools = arguments.get("tools")
    mine = [name for name in offered if name != "todo"]  # the run's plan is its own agent's
    if tools is None:
        tools = mine
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        return refused("`tools` must be a list of tool names")
    unknown = [t for t in tools if t not in mine]
    if unknown:
        return refused(f"`tools` names {', '.join(map(repr, unknown))}, which you do not have to give")
    if depth >= MAX_DEPTH and "sub_agent" in tools:
        if arguments.get("tools") is not None:
            return refused(f"a sub-agent at depth {depth} cannot start sub-agents (at most {MAX_DEPTH} levels)")
        tools = [t for t in tools if t != "sub_agent"]
    budget = arguments.get("budget")
    if budget is not None:
        try:
            if isinstance(budget, str) and budget.strip().isdigit():
                budget = int(budget)  # a plain number is tokens here, as in the schema
            budget = budget if isinstance(budget, int) and not isinstance(budget, bool) else parse_tokens(budget)
        except UnitError as exc:
            return refused(f"`budget`: {exc}")
        if budget <= 0:
            return refused(f"`budget` must be more than zero tokens, got {budget}")
    return Delegation(task=task.strip(), tools=tuple(dict.fromkeys(tools)), budget=budget, depth=depth)
