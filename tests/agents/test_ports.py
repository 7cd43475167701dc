"""The tools port as an explicit interface (agents/ports.py, docs/layout.md): every tools class
subclasses Tools, the composites forward each hook by name (no __getattr__), and the engine calls
the hooks directly: nothing under runs/ probes a tools port with getattr or hasattr."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from agents.agent_tools import AgentTools
from agents.coding_tools import CodingTools
from agents.declared_tools import DeclaredTools
from agents.mcp_client import McpTools, ServerConfig
from agents.ports import GateOutcome, PageCapture, ToolResult, Tools, ToolsPort, ToolsWrapper
from agents.task_tools import ResultsTools, TaskTools

ROOT = Path(__file__).resolve().parents[2]
BASES = {"Tools", "ToolsWrapper"}
COMPOSITES = (AgentTools, DeclaredTools, McpTools)


# -- the scans -----------------------------------------------------------------------------


def tool_probes(source: str, filename: str = "<source>") -> list[str]:
    """Each getattr/hasattr whose object is a tools port (an expression naming `tools`), as
    `file:line: text`."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
            continue
        if node.func.id in ("getattr", "hasattr") and "tools" in ast.unparse(node.args[0]).lower():
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def tools_classes(paths: list[Path]) -> dict[str, tuple[str, list[str], bool]]:
    """Every class of these modules: `file:Name` -> (its name, its bases' names, whether it
    defines both specs and call)."""
    classes = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                defined = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
                bases = [b.attr if isinstance(b, ast.Attribute) else ast.unparse(b) for b in node.bases]
                where = f"{path.relative_to(ROOT)}:{node.name}"
                classes[where] = (node.name, bases, {"specs", "call"} <= defined)
    return classes


def not_ports(classes: dict[str, tuple[str, list[str], bool]]) -> list[str]:
    """The classes with specs and call none of whose bases leads to Tools (by name)."""
    bases_of = {}
    for name, bases, _ in classes.values():
        bases_of.setdefault(name, []).extend(bases)

    def reaches(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in BASES:
            return True
        return name not in seen and any(reaches(b, seen | {name}) for b in bases_of.get(name, []))

    stray = [where for where, (_, bases, port) in classes.items() if port and not any(reaches(b) for b in bases)]
    return [where for where in stray if where != "agents/ports.py:Tools"]  # the port itself


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py") if "migrations" not in p.parts)


def test_nothing_under_runs_probes_the_tools_port():
    probes = [hit for path in python_files("runs") for hit in tool_probes(path.read_text(), str(path))]
    assert probes == [], "call the hook on the tools port (agents.ports.Tools has every one):\n" + "\n".join(probes)


def test_the_probe_scan_finds_a_probe():
    source = (
        "def f(self, tools):\n"
        "    a = getattr(self.armed.tools, 'capture', None)\n"
        "    b = hasattr(tools, 'deadline')\n"
        "    c = getattr(user, 'is_authenticated', False)\n"
    )
    assert [hit.split(": ", 1)[0] for hit in tool_probes(source)] == ["<source>:2", "<source>:3"]


def test_every_tools_class_subclasses_the_port():
    classes = tools_classes(python_files("agents", "tests", "bench"))
    ports = [where for where, (_, _, port) in classes.items() if port]
    assert "agents/coding_tools.py:CodingTools" in ports and "agents/browser/__init__.py:BrowserTools" in ports
    assert not_ports(classes) == []


def test_the_subclass_scan_finds_a_stray_port():
    classes = {
        "a.py:Good": ("Good", ["Tools"], True),
        "a.py:Fake": ("Fake", ["Good"], True),
        "a.py:Stray": ("Stray", ["object"], True),
        "a.py:Helper": ("Helper", [], False),
    }
    assert not_ports(classes) == ["a.py:Stray"]


def test_the_composites_forward_by_name_not_by_magic():
    for composite in COMPOSITES:
        assert issubclass(composite, ToolsWrapper)
        for magic in ("__getattr__", "__setattr__", "__getattribute__"):
            assert magic not in vars(composite), f"{composite.__name__} defines {magic}"
    assert ToolsPort is Tools


def test_the_wrapper_forwards_every_hook_of_the_port():
    hooks = {name for name in vars(Tools) if not name.startswith("_")}
    assert {"specs", "call", "room_chars", "deadline", "notes", "videos", "capture", "close"} <= hooks
    assert sorted(hooks - set(vars(ToolsWrapper))) == []


# -- the defaults and the forwarding, called -------------------------------------------------


class Bare(Tools):
    def specs(self):
        return [{"name": "look", "description": "look", "input_schema": {"type": "object"}}]

    def call(self, name, arguments):
        return ToolResult(f"{name} done")


class Recording(Bare):
    """Every hook overridden, each call written down."""

    def __init__(self):
        self.heard = []
        self.notes = ["armed"]
        self.videos = ["/videos/1.webm"]

    @property
    def workdir(self):
        return Path("/copy/pkg")

    def read_previous_results(self, folder):
        self.heard.append(("previous", folder))

    def approval_subjects(self, name, arguments):
        return ["subject"]

    def approval_equivalents(self, name, arguments):
        return [(name, ["subject"]), ("bash", ["subject"])]

    def capture(self):
        return PageCapture(url="https://example.test/")

    def pass_ended(self, number):
        self.heard.append(("ended", number))

    def pass_gate(self):
        return GateOutcome("make test", 0, "exit status: 0")

    def judge_evidence(self, number):
        return [("diff_stat", f"pass {number}")]

    def close(self):
        self.heard.append(("closed",))


def test_the_port_needs_specs_and_call():
    class Half(Tools):
        def specs(self):
            return []

    with pytest.raises(TypeError):
        Half()


def test_a_port_without_hooks_gets_the_defaults():
    tools = Bare()
    assert (tools.room_chars, tools.deadline, tools.workdir) == (None, None, None)
    assert (list(tools.notes), list(tools.videos)) == ([], [])
    arguments = {"selector": "#go", "n": 3, "text": "Publish"}
    assert tools.approval_subjects("click", arguments) == ["#go", "Publish"]
    assert tools.approval_equivalents("click", arguments) == [("click", ["#go", "Publish"])]
    assert (tools.capture(), tools.pass_gate(), tools.judge_evidence(1)) == (None, None, None)
    assert (tools.pass_ended(1), tools.close(), tools.read_previous_results(Path("/x"))) == (None, None, None)
    tools.room_chars, tools.deadline = 400, 12.5  # the engine sets both on any port
    assert (tools.room_chars, tools.deadline) == (400, 12.5) and Bare().room_chars is None


def mcp(inner):
    return McpTools(inner, [ServerConfig("tracker", "stdio", command=("true",))], allowed={"tracker": None})


@pytest.mark.parametrize(
    "wrap",
    [
        lambda inner: AgentTools(inner),
        lambda inner: DeclaredTools(inner, hidden=frozenset({"file_write"})),
        mcp,
        lambda inner: AgentTools(DeclaredTools(mcp(inner), hidden=frozenset())),
    ],
    ids=["agent", "declared", "mcp", "all three"],
)
def test_each_composite_hands_every_hook_to_its_inner_port(wrap):
    inner = Recording()
    tools = wrap(inner)
    tools.room_chars, tools.deadline = 900, 42.0
    assert (inner.room_chars, inner.deadline) == (900, 42.0) and (tools.room_chars, tools.deadline) == (900, 42.0)
    assert tools.workdir == Path("/copy/pkg") and tools.videos == ["/videos/1.webm"]
    assert list(tools.notes) == ["armed"]
    assert tools.approval_subjects("bash", {"command": "ls"}) == ["subject"]
    assert tools.approval_equivalents("test_run", {}) == [("test_run", ["subject"]), ("bash", ["subject"])]
    assert tools.capture().url == "https://example.test/"
    assert tools.pass_gate().exit_status == 0 and tools.judge_evidence(2) == [("diff_stat", "pass 2")]
    tools.read_previous_results(Path("/results/7"))
    tools.pass_ended(2)
    tools.close()
    assert inner.heard == [("previous", Path("/results/7")), ("ended", 2), ("closed",)]
    assert tools.call("look", {}).content == "look done"


def test_an_mcp_tool_is_gated_as_itself_and_the_inner_tools_as_the_inner_port_says():
    tools = mcp(Recording())
    arguments = {"issue": "7", "body": "urgent"}
    assert tools.approval_equivalents("tracker__add_comment", arguments) == [("tracker__add_comment", ["7", "urgent"])]
    assert tools.approval_equivalents("test_run", {}) == [("test_run", ["subject"]), ("bash", ["subject"])]


def test_the_results_tools_read_the_previous_runs_folder_through_the_hook(tmp_path):
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "notes.md").write_text("from the first run")
    tools = AgentTools(TaskTools(tmp_path / "out"))
    tools.read_previous_results(tmp_path / "before")
    read = tools.call("read_result", {"filename": str(tmp_path / "before" / "notes.md")})
    assert read.content == "from the first run" and not read.is_error
    assert ResultsTools(tmp_path / "out").previous_root is None


def test_only_a_coding_port_names_a_workdir():
    assert "workdir" in vars(CodingTools) and inspect.isdatadescriptor(vars(CodingTools)["workdir"])
    assert TaskTools(Path("/tmp/out")).workdir is None
