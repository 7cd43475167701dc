"""DeclaredTools: an agent package's run is offered and runs only the coding tools it declares."""

from agents.declared_tools import DeclaredTools
from agents.ports import ToolResult, Tools


class Inner(Tools):
    room_chars = None

    def specs(self):
        return [{"name": name} for name in ("bash", "file_write", "save_result")]

    def call(self, name, arguments):
        return ToolResult(f"ran {name}")

    def pass_gate(self):
        return "gate"


def test_it_hides_and_refuses_the_undeclared_and_passes_the_rest_through():
    inner = Inner()
    tools = DeclaredTools(inner, hidden=frozenset({"file_write"}))
    assert [spec["name"] for spec in tools.specs()] == ["bash", "save_result"]
    refused = tools.call("file_write", {"path": "x", "content": "y"})
    assert refused.is_error and "not one of this agent's tools" in refused.content
    assert tools.call("bash", {"command": "true"}).content == "ran bash"
    assert tools.pass_gate() == "gate"
    tools.room_chars = 400
    assert inner.room_chars == 400
