"""The tools port of a coding recipe (`workdir:`, docs/coding-loops.md): a shell command in the sandbox,
the file tools confined to the run's working copy, and the results tools.

Commands run through agents.sandbox (bubblewrap: the copy read-write and nothing else, no
network, a cleared environment); the file tools (agents.file_tools) run here and refuse any
path that resolves outside the copy. Like every tool, each failure goes back to the model as
a tool error; nothing here raises into the engine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.file_tools import FILE_TOOLS, FileTools
from agents.forked import Child
from agents.ports import GateOutcome, ToolResult, Tools
from agents.sandbox import CommandResult, Sandbox, SandboxUnavailable
from agents.shell_commands import command_subjects
from agents.task_tools import ResultsTools
from agents.test_run import TEST_RUN_TOOL, test_run, test_run_command
from budgets.guard import cut_marker

log = logging.getLogger(__name__)

BASH_TOOL = {
    "name": "bash",
    "description": (
        "Run a shell command (bash) in the working copy and get its exit status, stdout and stderr. "
        "Commands run in a sandbox: the working copy is writable, nothing else is, and there is no "
        "network. Each command starts afresh in the working folder (cd does not carry over; chain "
        "with &&). Long outputs are cut in the middle. Optional timeout in seconds."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "e.g. python3 -m unittest -v"},
            "timeout": {"type": "integer", "description": "seconds, at most the default (2 minutes)"},
        },
        "required": ["command"],
    },
}
FILE_TOOL_NAMES = frozenset(tool["name"] for tool in FILE_TOOLS)
# tools whose work a pattern decides (a regex can backtrack for ever): run in a child process
# that a timeout, a cancel or a stop kills, like a command
SEARCHES = frozenset({"grep", "glob"})
POLL_SECONDS = 0.1
# of a gate command's output, the last this many characters are kept (what a failing test
# suite says last: the failures and the summary)
GATE_TAIL_CHARS = 8000
# tools that may change files in the copy: after one, the copy is measured for the run page
WRITERS = frozenset({"bash", "edit", "file_write"})
# measuring the copy is a `git add -A` on a throwaway index: after one slower than SLOW_MEASURE
# seconds (a large tree) the next waits MEASURE_GAP_FACTOR times as long, so the run page's live
# diff never costs the agent much of its time
SLOW_MEASURE = 0.25
MEASURE_GAP_FACTOR = 10


class CodingTools(Tools):
    def __init__(
        self,
        *,
        root: Path,
        start: Path,
        output_dir: Path,
        sandbox: Sandbox,
        command_timeout: float,
        cancelled: Callable[[], str | None] = lambda: None,
        on_pass_end: Callable[[int], str | None] | None = None,
        on_change: Callable[[], object] | None = None,
        notes: list[str] | None = None,
        until_command: str | None = None,
    ):
        self.root, self.start = Path(root), Path(start)
        self.results = ResultsTools(output_dir)
        self.files = FileTools(self.root, start=self.start)
        self.sandbox = sandbox
        self.command_timeout = command_timeout
        self.cancelled = cancelled
        self.on_pass_end = on_pass_end
        self.notes = list(notes or [])  # the worker records these as the run's events
        self.until_command = until_command  # the pass's gate: must exit 0 for the pass to count as done
        self.deadline: float | None = None  # time.monotonic() when the leg's clock runs out (the engine sets it)
        self._diff_stat: dict[int, str] = {}
        self.measure = Throttled(on_change) if on_change is not None else None

    @property
    def room_chars(self) -> int | None:
        return self.results.room_chars

    @room_chars.setter
    def room_chars(self, chars: int | None) -> None:
        self.results.room_chars = chars
        self.files.room_chars = chars

    @property
    def workdir(self) -> Path:
        return self.start

    def read_previous_results(self, folder: Path) -> None:
        self.results.read_previous_results(folder)

    def specs(self) -> list[dict[str, Any]]:
        return [BASH_TOOL, *FILE_TOOLS, TEST_RUN_TOOL, *self.results.specs()]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        result = self._call(name, arguments)
        if self.measure is not None:
            # a failed edit or write changed nothing; a failed command may have
            self.measure(due=name in ("bash", "test_run") or (name in WRITERS and not result.is_error))
        return result

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if not isinstance(arguments, dict):
            return ToolResult(f"{name}: arguments must be an object", is_error=True)
        if name == "bash":
            return self._bash(arguments.get("command"), arguments.get("timeout"))
        if name == "test_run":
            return test_run(self, arguments)
        if name in SEARCHES:
            return self._search(name, arguments)
        if name in FILE_TOOL_NAMES:
            return self.files.call(name, arguments)
        return self.results.call(name, arguments)

    def _search(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """grep or glob in a forked child, bounded like a command: Python's regex engine cannot
        be interrupted, and a pattern such as `(a+)+$` would otherwise hold the worker for good."""
        seconds = self.command_timeout
        if self.deadline is not None:
            seconds = min(seconds, self.deadline - time.monotonic())
        ends = time.monotonic() + max(seconds, 0)
        with Child(_search_in_child, self.files, name, arguments) as child:
            try:
                while not child.receive.poll(POLL_SECONDS):
                    why = self.cancelled()
                    alive = child.alive()
                    if why or time.monotonic() >= ends or not alive and not child.receive.poll(0):
                        reason = why or (f"took longer than {int(seconds)}s" if alive else "the search process died")
                        return ToolResult(f"{name}: stopped: {reason}; narrow the path or simplify the pattern", True)
                return child.receive.recv()
            except EOFError:
                return ToolResult(f"{name}: stopped: the search process died", is_error=True)

    def _bash(self, command: object, timeout: object) -> ToolResult:
        outcome = self.run_command("bash", command, timeout)
        if isinstance(outcome, ToolResult):
            return outcome
        text = outcome.text()
        if self.room_chars is not None and len(text) > self.room_chars:
            text = text[: self.room_chars] + "\n" + cut_marker(len(text), self.room_chars)
        return ToolResult(text, is_error=outcome.killed is not None)

    def run_command(self, tool: str, command: object, timeout: object) -> CommandResult | ToolResult:
        """A command of the agent's (`bash`, `test_run`) in the sandbox, in the workdir, with the
        command timeout (or less: the `timeout` asked, the leg's clock); a ToolResult saying why
        when it cannot run."""
        if not isinstance(command, str) or not command.strip():
            return ToolResult(f"{tool}: command must be a non-empty text", is_error=True)
        seconds = self.command_timeout
        if timeout is not None:
            if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
                return ToolResult(f"{tool}: timeout must be a positive number of seconds", is_error=True)
            seconds = min(seconds, float(timeout))
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left < 1:
                return ToolResult(f"{tool}: not run: this leg's time is up", is_error=True)
            seconds = min(seconds, left)
        try:
            return self.sandbox.run(command, cwd=self.start, timeout=seconds, cancelled=self.cancelled)
        except SandboxUnavailable as exc:
            return ToolResult(f"{tool}: the sandbox cannot start, so the command was not run: {exc}", is_error=True)
        except ValueError as exc:  # the agent removed its workdir
            return ToolResult(f"{tool}: not run: {exc}", is_error=True)

    # -- approvals: `approve: [bash]` or `bash(git push:*)` --------------------------------

    def approval_subjects(self, name: str, arguments: dict) -> list[str]:
        if name == "test_run":
            command = test_run_command(self, arguments)
            return command_subjects(command) if isinstance(command, str) else []
        if name != "bash":
            return [v for v in arguments.values() if isinstance(v, str)]
        command = arguments.get("command")
        return command_subjects(command) if isinstance(command, str) else []

    def approval_equivalents(self, name: str, arguments: dict) -> list[tuple[str, list[str]]]:
        """A test_run is a command like bash's: `approve: [bash]` or `bash(<prefix>:*)` hold it too."""
        subjects = self.approval_subjects(name, arguments)
        return [(name, subjects), ("bash", subjects)] if name == "test_run" else [(name, subjects)]

    # -- the engine's hooks ------------------------------------------------------------------

    def pass_ended(self, number: int) -> None:
        """The working copy's tree at the pass's end: its diff and stat (the judge reads it)."""
        if self.on_pass_end is not None:
            self._diff_stat[number] = self.on_pass_end(number) or ""

    def pass_gate(self) -> GateOutcome | None:
        """The recipe's until_command run in the workdir, in the sandbox, with the command
        timeout; None when the recipe has none. A cancel or a stop kills it like any command."""
        command = self.until_command
        if not command:
            return None
        try:
            outcome = self.sandbox.run(command, cwd=self.start, timeout=self.command_timeout, cancelled=self.cancelled)
        except SandboxUnavailable as exc:
            return GateOutcome(command, None, f"not run: the sandbox cannot start: {exc}")
        except ValueError as exc:  # the agent removed its workdir
            return GateOutcome(command, None, f"not run: {exc}")
        status = f"killed: {outcome.killed}" if outcome.killed else f"exit status: {outcome.exit_status}"
        body = "\n".join(part.removesuffix("\n") for part in (outcome.stdout, outcome.stderr) if part)
        if len(body) > GATE_TAIL_CHARS:
            body = f"[... {len(body) - GATE_TAIL_CHARS} characters before these ...]\n" + body[-GATE_TAIL_CHARS:]
        interrupted = self.cancelled() if outcome.killed else None
        return GateOutcome(command, outcome.exit_status, f"{status}\n{body or '(no output)'}", interrupted)

    def judge_evidence(self, number: int) -> list[tuple[str, str]]:
        stat = self._diff_stat.get(number)
        return [("diff_stat", stat or "(no change to the working copy)")] if stat is not None else []


class Throttled:
    """Measures the copy (the run page's live diff) after each tool call that may have written;
    after a slow measurement, one that falls inside the gap is owed and made at the first call
    after it (the pass's end measures anyway). A failure is logged, never the agent's."""

    def __init__(self, measure: Callable[[], object], clock: Callable[[], float] = time.monotonic):
        self._measure, self._clock = measure, clock
        self.owed, self.next_at = False, 0.0

    def __call__(self, *, due: bool) -> None:
        self.owed = self.owed or due
        if not self.owed or self._clock() < self.next_at:
            return
        started = self._clock()
        try:
            self._measure()
        except Exception:
            log.warning("the working copy could not be measured mid-pass", exc_info=True)
        took = self._clock() - started
        self.owed, self.next_at = False, started + (MEASURE_GAP_FACTOR * took if took > SLOW_MEASURE else 0.0)


def _search_in_child(files: FileTools, name: str, arguments: dict, send) -> None:
    try:
        send.send(files.call(name, arguments))
    finally:
        send.close()
