"""An agent package's tools (docs/packages.md): a run of an agent gets only the coding tools its
manifest declares. The port's other tools of that kind are neither offered nor run; everything
else (the results tools, MCP tools) and every hook pass through to the inner port."""

from __future__ import annotations

from typing import Any

from agents.ports import ToolResult, ToolsPort, ToolsWrapper


class DeclaredTools(ToolsWrapper):
    def __init__(self, inner: ToolsPort, *, hidden: frozenset[str]):
        super().__init__(inner)
        self.hidden = hidden

    def specs(self) -> list[dict[str, Any]]:
        return [spec for spec in self.inner.specs() if spec["name"] not in self.hidden]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name in self.hidden:
            return ToolResult(f"{name} is not one of this agent's tools (its package does not declare it)", True)
        return self.inner.call(name, arguments)
