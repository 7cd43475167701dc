"""An agent package's tools (docs/packages.md): a run of an agent gets only the coding tools its
manifest declares. The port's other tools of that kind are neither offered nor run; everything
else (the results tools, MCP tools) and every optional hook pass through to the inner port."""

from __future__ import annotations

from typing import Any

from agents.ports import ToolResult, ToolsPort


class DeclaredTools:
    def __init__(self, inner: ToolsPort, *, hidden: frozenset[str]):
        self.__dict__["inner"] = inner  # before anything: __getattr__ reads it
        self.__dict__["hidden"] = hidden

    def __getattr__(self, name: str):  # the inner port's optional hooks (start, pass_gate, …)
        return getattr(self.__dict__["inner"], name)

    def __setattr__(self, name: str, value: Any) -> None:  # room_chars, set by the engine
        setattr(self.__dict__["inner"], name, value)

    def specs(self) -> list[dict[str, Any]]:
        return [spec for spec in self.__dict__["inner"].specs() if spec["name"] not in self.__dict__["hidden"]]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name in self.__dict__["hidden"]:
            return ToolResult(f"{name} is not one of this agent's tools (its package does not declare it)", True)
        return self.__dict__["inner"].call(name, arguments)
