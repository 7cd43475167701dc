"""THE list of tool names an agent package may declare (`declares_tools` in rysh.pkg.yaml), and
what each is here (docs/packages.md). One place: the manifest reader, the checks and the pages
all read it, so a tool the dashboard gains is one edit.

Pure: no Django.
"""

from __future__ import annotations

# rysh's coding tools, ours under the same names in a working copy (docs/coding-loops.md)
CODING_TOOLS = ("bash", "file_read", "edit", "file_write", "grep", "glob")
# the tools rysh's agents declare beside them: test results, a to-do list, sub-agents
AGENT_TOOLS = ("test_run", "todo", "sub_agent")
# rysh's one browser tool is our browser tools: only a web recipe drives a browser
BROWSER_TOOL = "browser_action"

KNOWN_TOOLS: tuple[str, ...] = (*CODING_TOOLS, *AGENT_TOOLS, BROWSER_TOOL)

# what the pages say each known tool is here
TOOL_MEANING = {
    **{name: "coding tool (in the run's working copy)" for name in CODING_TOOLS},
    "test_run": "runs the tests: pass/fail counts and the first failures",
    "todo": "the agent's to-do list",
    "sub_agent": "a sub-agent with its own context, its budget carved from the run's",
    BROWSER_TOOL: "the browser tools (a web recipe)",
}


def known_tool(name: str) -> bool:
    return name in KNOWN_TOOLS


def undeclared_coding_tools(declared: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The coding tools (test_run among them) an agent did not declare: a run of it is not offered them."""
    return frozenset((*CODING_TOOLS, "test_run")) - set(declared)
