"""The `test_run` tool of a coding run (docs/agent-tools.md): the recipe's until_command, or a
command the model gives, run like `bash` (CodingTools.run_command: the sandbox, the workdir, the
timeouts), answered with the facts of its log (agents.test_summary) instead of the whole log."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents.ports import ToolResult
from agents.test_summary import summarize

if TYPE_CHECKING:
    from agents.coding_tools import CodingTools

TEST_RUN_TOOL = {
    "name": "test_run",
    "description": (
        "Run the tests in the working copy (in the sandbox, like bash) and get a short, structured "
        "answer: passed / failed / errors counts, the exit status and the first failures (test id and "
        "a few lines each), not the whole log. Without `command` it runs the recipe's until_command "
        "(the test the pass must pass). Reads pytest, go test and unittest, and any 'N passed, M "
        "failed' line; otherwise it answers with the exit status and the log's last lines."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "e.g. python -m pytest -q tests/test_parser.py"},
            "timeout": {"type": "integer", "description": "seconds, at most the default (2 minutes)"},
        },
    },
}


def test_run_command(tools: CodingTools, arguments: dict[str, Any]) -> object:
    """The command a test_run call runs: the one it gives, else the recipe's until_command."""
    command = arguments.get("command")
    return tools.until_command if command is None else command


def test_run(tools: CodingTools, arguments: dict[str, Any]) -> ToolResult:
    command = test_run_command(tools, arguments)
    if command is None:
        return ToolResult(
            "test_run: this recipe has no until_command; give the test command as `command`", is_error=True
        )
    outcome = tools.run_command("test_run", command, arguments.get("timeout"))
    if isinstance(outcome, ToolResult):
        return outcome
    log = "\n".join(part.removesuffix("\n") for part in (outcome.stdout, outcome.stderr) if part)
    answer = {"command": command, **summarize(log, outcome.exit_status, outcome.killed).as_dict()}
    if outcome.killed:
        answer["killed"] = outcome.killed
    # a failing test is the answer asked for, not a tool error; only a killed command is one
    return ToolResult(json.dumps(answer, indent=1, ensure_ascii=False), is_error=outcome.killed is not None)
