"""The engine's two ports. The engine knows these shapes, never Anthropic or Playwright.

The model port is a Protocol (a provider has one method); the tools port is a base class, Tools,
whose every hook the engine calls has a default that does nothing.

Conversations are kept in the Messages API's JSON shape (role + content blocks), so a
checkpoint is plain JSON and any Messages-compatible provider can replay it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    # the part of cache_write_tokens written for an hour (priced apart; counted as any write)
    cache_write_1h_tokens: int = 0

    @property
    def counted(self) -> int:
        """What the budget counts (rysh): input + cache write + output; cache reads are not."""
        return self.input_tokens + self.cache_write_tokens + self.output_tokens

    @property
    def context(self) -> int:
        """Every input token of the call, cached or not: the size of what was sent."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_tokens: int
    deadline: float  # time.monotonic() by which the call (retries included) must be over
    purpose: str = "task"  # task | wrap-up | judging: for labels and the scripted model
    pass_number: int = 1
    leg_start: int = 0  # index in `messages` where the current leg (task or wrap-up) began
    # `low` | `medium` | `high`: the recipe's effort, set only for a model that takes it
    # (budgets.efforts); the provider sends it with adaptive thinking
    effort: str | None = None
    cancelled: Callable[[], bool] = lambda: False  # polled while the call is in flight


@dataclass(frozen=True)
class ModelReply:
    # assistant content blocks: text and tool_use, and thinking / redacted_thinking exactly as
    # received (they go back unchanged on the next call of a tool-use loop)
    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()

    @property
    def thinking(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") in ("thinking", "redacted_thinking")]

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]


class ModelCancelled(Exception):
    """The call was interrupted by a cancel; what it may have cost is unknown."""


class ModelError(Exception):
    """The model could not answer (after retries, within the deadline). The message is safe
    to show: it never contains a key or a request body."""


class ModelPort(Protocol):
    label: str  # "anthropic" or "scripted (offline demo model)": shown on every output

    def complete(self, request: ModelRequest) -> ModelReply: ...


# Optional on a model port (both providers have it; test doubles may not):
#   count_tokens(request) -> int | None: the exact input tokens of the request as the model
#       would read them (every input token, cached or not), or None when the count cannot be
#       had (no key, an error after bounded retries, no time left). Nothing is billed for it.
#       The engine asks only near the edge, where the byte bound would end a leg too early.


@dataclass
class ToolResult:
    content: str
    is_error: bool = False
    files: list[str] = field(default_factory=list)  # result files written by this call
    # images for the model, each {"media_type": "image/jpeg", "data": <base64>}; they travel
    # in the tool result and count against the input bound by their base64 bytes
    images: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class GateOutcome:
    """A command that must exit 0 for a pass to count as done, run once the pass ended (a
    coding recipe's until_command). `interrupted`: a cancel or a stop killed it, so it says
    nothing about the pass (it runs again when the run goes on)."""

    command: str
    exit_status: int | None  # None: killed, or not run
    output: str  # "exit status: N", "killed: why" or "not run: why", then the tail of its output
    interrupted: str | None = None


@dataclass(frozen=True)
class PageCapture:
    """Where a web step left the browser: for the filmstrip and the continue checkpoint."""

    url: str
    title: str = ""
    jpeg: bytes | None = None


class Tools(ABC):
    """The tools port: every tools class of a run subclasses it (docs/layout.md, "A new tool").

    `specs` and `call` are its own; every other hook the engine calls is written out here with
    a default that does nothing, so the engine calls each one directly and a tools class
    overrides only the hooks it has a use for. Composites (a port wrapping another) subclass
    ToolsWrapper, which forwards each hook to the inner port by name."""

    # what the next model call has room for, in characters (about 4 a token): tools that read
    # pages or files read no more than that. The engine sets it before a step's tool calls.
    room_chars: int | None = None
    # time.monotonic() when the leg's clock runs out: a command never runs past it (the engine
    # sets it before a step's tool calls)
    deadline: float | None = None
    # said in the run's events: those there when the worker arms the tools, then each one added
    # during a step (an MCP server that died and was restarted)
    notes: Sequence[str] = ()
    # the video files the browser left, recorded as the run's events once close() returned
    videos: Sequence[str] = ()

    @abstractmethod
    def specs(self) -> list[dict[str, Any]]:
        """Tool definitions in the Messages API shape: name, description, input_schema."""

    @abstractmethod
    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool. Errors come back as ToolResult(is_error=True), never as exceptions."""

    @property
    def workdir(self) -> Path | None:
        """A coding run's folder in its working copy (the system prompt names it); None for
        every other run."""
        return None

    def read_previous_results(self, folder: Path) -> None:
        """A run an on_success chain started also reads the previous run's results folder, read
        only (docs/chains.md). Tools without the results tools ignore it."""
        return None

    def approval_subjects(self, name: str, arguments: dict[str, Any]) -> list[str]:
        """What an `approve:` pattern is matched against: by default the call's text arguments
        (a browser adds a clicked element's own text, a coding port a command's words)."""
        return [v for v in arguments.values() if isinstance(v, str)]

    def approval_equivalents(self, name: str, arguments: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """(tool, subjects) pairs a call is gated as: the call as itself first, then what it
        amounts to (Enter on a button is a click on it, a click on a link a navigate to its
        href), so a gate holds however the action is performed. By default only itself."""
        return [(name, self.approval_subjects(name, arguments))]

    def capture(self) -> PageCapture | None:
        """Where a web step left the browser, called after every step; None: nothing to show."""
        return None

    def pass_ended(self, number: int) -> None:
        """A pass's legs ended (before its gate and judge): a port that keeps state across
        passes (a working copy) records it. By default nothing."""
        return None

    def pass_gate(self) -> GateOutcome | None:
        """The command a pass must pass to count as done (a coding recipe's until_command), run
        once the pass's legs ended, before the judge; None: the pass has no gate."""
        return None

    def judge_evidence(self, number: int) -> list[tuple[str, str]] | None:
        """What the judge reads beside the pass's result (a coding pass: its diff stat; the
        judge then also reads its final answer); None: the result alone."""
        return None

    def close(self) -> None:
        """The worker lets go of the run (paused or finished): close what the port opened (the
        browser). By default nothing."""
        return None


# the name the engine types against
ToolsPort = Tools


class ToolsWrapper(Tools):
    """A tools port around another (`inner`): each hook written out, forwarded to the inner
    port. A composite overrides the hooks it changes; tests/agents/test_ports.py fails when a
    hook of Tools is not forwarded here."""

    def __init__(self, inner: Tools):
        self.inner = inner

    @property
    def room_chars(self) -> int | None:
        return self.inner.room_chars

    @room_chars.setter
    def room_chars(self, chars: int | None) -> None:
        self.inner.room_chars = chars

    @property
    def deadline(self) -> float | None:
        return self.inner.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.inner.deadline = value

    @property
    def notes(self) -> Sequence[str]:
        return self.inner.notes

    @property
    def videos(self) -> Sequence[str]:
        return self.inner.videos

    def specs(self) -> list[dict[str, Any]]:
        return self.inner.specs()

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self.inner.call(name, arguments)

    @property
    def workdir(self) -> Path | None:
        return self.inner.workdir

    def read_previous_results(self, folder: Path) -> None:
        self.inner.read_previous_results(folder)

    def approval_subjects(self, name: str, arguments: dict[str, Any]) -> list[str]:
        return self.inner.approval_subjects(name, arguments)

    def approval_equivalents(self, name: str, arguments: dict[str, Any]) -> list[tuple[str, list[str]]]:
        return self.inner.approval_equivalents(name, arguments)

    def capture(self) -> PageCapture | None:
        return self.inner.capture()

    def pass_ended(self, number: int) -> None:
        self.inner.pass_ended(number)

    def pass_gate(self) -> GateOutcome | None:
        return self.inner.pass_gate()

    def judge_evidence(self, number: int) -> list[tuple[str, str]] | None:
        return self.inner.judge_evidence(number)

    def close(self) -> None:
        self.inner.close()
