"""The engine's two ports. The engine knows these shapes, never Anthropic or Playwright.

Conversations are kept in the Messages API's JSON shape (role + content blocks), so a
checkpoint is plain JSON and any Messages-compatible provider can replay it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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


class ToolsPort(Protocol):
    def specs(self) -> list[dict[str, Any]]:
        """Tool definitions in the Messages API shape: name, description, input_schema."""
        ...

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool. Errors come back as ToolResult(is_error=True), never as exceptions."""
        ...


# Optional, used when a tools port has them (the browser's do):
#   approval_subjects(name, arguments) -> list[str]: what an `approve:` pattern is matched
#       against (a click's selector or text and the element's visible text)
#   approval_equivalents(name, arguments) -> list[(tool, subjects)]: the call as itself first,
#       then what it amounts to (Enter on a button is a click on it, a click on a link a
#       navigate to its href), so a gate holds however the action is performed
#   capture() -> PageCapture | None: called after every step
#   close() -> None: called when the worker lets go of the run (paused or finished)
#   pass_gate() -> GateOutcome | None (the coding tools'): run once a pass's legs ended, before
#       the judge; the pass counts as done only when it exited 0 and the judge said YES
