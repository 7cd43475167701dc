"""The coding recipe's tools port: bash in the sandbox, file tools, results; the leg's clock
bounds a command, the room the next call has cuts its output with the marker."""

import time

import pytest

from agents.coding_tools import CodingTools
from agents.sandbox import Sandbox, SandboxConfig


@pytest.fixture
def tools(tmp_path):
    root = tmp_path / "copy"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/a.txt").write_text("hello\n")
    sandbox = Sandbox(root, config=SandboxConfig(hidden=(str(tmp_path / "results"),)))
    return CodingTools(
        root=root, start=root / "pkg", output_dir=tmp_path / "results", sandbox=sandbox, command_timeout=120
    )


def test_it_offers_rysh_s_tools_and_the_results_tools(tools):
    names = [spec["name"] for spec in tools.specs()]
    assert names[:6] == ["bash", "file_read", "edit", "file_write", "grep", "glob"]
    assert {"save_result", "list_results", "read_result"} <= set(names) and "http_get" not in names


def test_commands_start_in_the_workdir_and_files_are_relative_to_it(tools):
    result = tools.call("bash", {"command": "pwd; cat a.txt; echo oops >&2; exit 3"})
    assert not result.is_error  # a failing command is an answer, not a tool error
    assert result.content.startswith("exit status: 3") and "pkg\n" in result.content and "oops" in result.content
    assert "hello" in tools.call("file_read", {"path": "a.txt"}).content
    tools.call("save_result", {"filename": "out.txt", "content": "kept"})
    assert tools.call("read_result", {"filename": "out.txt"}).content == "kept"


def test_a_command_never_runs_past_the_legs_clock(tools):
    tools.deadline = time.monotonic() + 1.5
    began = time.monotonic()
    result = tools.call("bash", {"command": "sleep 30"})
    assert result.is_error and "timed out" in result.content
    assert time.monotonic() - began < 4
    tools.deadline = time.monotonic() + 0.5
    refused = tools.call("bash", {"command": "true"})
    assert refused.is_error and "this leg's time is up" in refused.content


def test_its_own_timeout_is_bounded_by_the_default(tools):
    tools.command_timeout = 1
    result = tools.call("bash", {"command": "sleep 30", "timeout": 600})
    assert result.is_error and "timed out after 1s" in result.content


def test_output_is_cut_to_the_room_the_next_call_has(tools):
    tools.room_chars = 500
    result = tools.call("bash", {"command": "seq 1 100000"})
    assert len(result.content) < 700 and "cut" in result.content.splitlines()[-1]
    assert len(tools.call("file_read", {"path": "a.txt"}).content) <= 700


@pytest.mark.parametrize(
    ("arguments", "said"),
    [({}, "command must be a non-empty text"), ({"command": "ls", "timeout": -1}, "positive number")],
)
def test_bad_arguments_are_tool_errors(tools, arguments, said):
    result = tools.call("bash", arguments)
    assert result.is_error and said in result.content


def test_a_cancel_kills_the_command(tools):
    asked = time.monotonic() + 0.5
    tools.cancelled = lambda: "the run was cancelled" if time.monotonic() >= asked else None
    result = tools.call("bash", {"command": "sleep 30"})
    assert result.is_error and "the run was cancelled" in result.content
    assert time.monotonic() - asked < 1.5


def test_the_judge_gets_the_diff_stat_a_pass_ended_with(tools):
    tools.on_pass_end = lambda number: f"M pkg/a.txt  +1 -0 (pass {number})"
    assert tools.judge_evidence(1) == []
    tools.pass_ended(1)
    assert tools.judge_evidence(1) == [("diff_stat", "M pkg/a.txt  +1 -0 (pass 1)")]


def test_a_regex_that_backtracks_for_ever_is_stopped_like_a_command(tools):
    (tools.root / "pkg/slow.txt").write_text("a" * 40 + "!\n")
    tools.command_timeout = 1
    began = time.monotonic()
    result = tools.call("grep", {"pattern": "(a+)+$"})
    assert result.is_error and "took longer than 1s" in result.content
    assert time.monotonic() - began < 3
    found = tools.call("grep", {"pattern": "hel+o"})
    assert not found.is_error and "a.txt:1: hello" in found.content
    assert "a.txt" in tools.call("glob", {"pattern": "*.txt"}).content


def test_a_cancel_stops_a_search(tools):
    (tools.root / "pkg/slow.txt").write_text("a" * 40 + "!\n")
    asked = time.monotonic() + 0.3
    tools.cancelled = lambda: "the run was cancelled" if time.monotonic() >= asked else None
    result = tools.call("grep", {"pattern": "(a+)+$"})
    assert result.is_error and "the run was cancelled" in result.content
    assert time.monotonic() - asked < 1.5


def _grep_in(tools, send) -> None:
    send.send([tools.call("grep", {"pattern": "hel+o"}).content, tools.call("glob", {"pattern": "*.txt"}).content])


def test_grep_and_glob_answer_inside_a_daemonic_process(tools):
    """A django-q2 worker is a daemonic process, which multiprocessing refuses any child: the
    searches' own child must start there all the same (agents/forked.py)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_grep_in, args=(tools, send), daemon=True)
    worker.start()
    assert receive.poll(30), "the daemonic worker answered nothing"
    grep, glob = receive.recv()
    worker.join(5)
    assert "a.txt" in grep and "hello" in grep and "stopped" not in grep
    assert "a.txt" in glob
