"""test_run in a real working copy, in the sandbox: the recipe's until_command or the model's
command, answered with counts and the first failures instead of the whole log."""

import json
from pathlib import Path

import pytest

from agents.coding_tools import CodingTools
from agents.sandbox import Sandbox, SandboxConfig
from runs.approvals import equivalents_of, gate_call

# the sandbox's python3 has no pytest of its own: the suite's, read-only, plugins left out
SITE = Path(pytest.__file__).resolve().parent.parent
PYTEST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONPATH={SITE} python3 -m pytest -q -p no:cacheprovider"
TESTS = """\
def test_adds():
    assert 1 + 1 == 2

def test_subtracts():
    got = 3 - 1
    assert got == 1

def test_divides():
    raise ZeroDivisionError("by zero")
"""


@pytest.fixture
def tools(tmp_path):
    root = tmp_path / "copy"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/test_calc.py").write_text(TESTS)
    sandbox = Sandbox(root, config=SandboxConfig(hidden=(str(tmp_path / "results"),)))
    return CodingTools(
        root=root,
        start=root / "pkg",
        output_dir=tmp_path / "results",
        sandbox=sandbox,
        command_timeout=120,
        until_command=PYTEST,
    )


def test_it_runs_the_until_command_and_answers_counts_and_the_first_failures(tools):
    result = tools.call("test_run", {})
    assert not result.is_error  # failing tests are the answer asked for
    answer = json.loads(result.content)
    assert answer["command"] == PYTEST and answer["status"] == "failed" and answer["exit_status"] == 1
    assert (answer["format"], answer["passed"], answer["failed"], answer["errors"]) == ("pytest", 1, 2, 0)
    assert [f["id"] for f in answer["failures"]] == ["test_calc.py::test_subtracts", "test_calc.py::test_divides"]
    assert answer["failures"][0]["lines"][0] == "E       assert 2 == 1"
    assert "ZeroDivisionError: by zero" in answer["failures"][1]["lines"][0]
    assert "def test_adds" not in result.content  # the failures, not the log


def test_the_model_s_own_command_runs_instead_and_a_green_run_says_passed(tools):
    (tools.start / "test_calc.py").write_text("def test_fine():\n    assert True\n")
    answer = json.loads(tools.call("test_run", {"command": PYTEST + " test_calc.py"}).content)
    assert (answer["status"], answer["exit_status"], answer["passed"], answer["failed"]) == ("passed", 0, 1, 0)
    assert "failures" not in answer


def test_an_unparsed_log_comes_back_as_its_exit_status_and_tail(tools):
    answer = json.loads(tools.call("test_run", {"command": "echo checking; echo it broke >&2; exit 4"}).content)
    assert (answer["format"], answer["exit_status"]) == ("unparsed", 4)
    assert answer["tail"] == ["checking", "it broke"]


def test_without_an_until_command_the_model_must_say_the_command(tools):
    tools.until_command = None
    result = tools.call("test_run", {})
    assert result.is_error and "no until_command" in result.content


def test_a_command_killed_by_its_timeout_is_a_tool_error(tools):
    result = tools.call("test_run", {"command": "sleep 30", "timeout": 1})
    assert result.is_error and json.loads(result.content)["status"] == "killed"


def test_its_command_is_held_by_the_approvals_that_hold_bash(tools):
    asked = equivalents_of(tools, "test_run", {})
    assert gate_call(["bash"], asked) is not None
    assert gate_call(["bash(python3 -m pytest:*)"], asked) is not None  # the command the until_command runs
    assert gate_call(["bash(git push:*)"], asked) is None
    pushing = equivalents_of(tools, "test_run", {"command": "make test && git push origin"})
    assert gate_call(["bash(git push:*)"], pushing)[1] == "git push origin"
    assert gate_call(["test_run"], equivalents_of(tools, "test_run", {"command": "make test"})) is not None
