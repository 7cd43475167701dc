"""The offline scripted model: replays a YAML script for demos and tests, never Claude.

    passes:                      # pass N beyond the list uses the last entry
      - task: [<turn>, ...]      # the task leg's turns, in order
        repeat_last: true        # optional: when turns run out repeat the last one (default:
                                 # answer "Done." with no tool call); applies to both legs
        wrap-up: [<turn>, ...]   # the wrap-up leg's turns
        judge: "NO\\nreason"      # the judge's reply after this pass
        judge_if:                # optional: other replies for other goals (a re-judge of an
          - goal_has: seven      #   edited until:): the first whose words the goal holds
            judge: "NO\\nreason"  #   (any case) answers instead of `judge`
    latency_seconds: 0.5         # optional: how long each call takes (cancel is polled)

    <turn>: {text: "...", tool_calls: [{name: save_result, input: {...}}]}

The turn is chosen statelessly, so a run may continue in another process: it is the number
of assistant messages since `request.leg_start`. Tool-use ids are stable and unique within
a conversation: toolu_scripted_<pass>_<leg>_<turn>_<k>.

Usage is deterministic and realistic enough for the budget to be exercised. With B the
UTF-8 bytes of the system prompt, the compact JSON of the tools and of each message:
context = ceil(B / 4), never more than B. Caching is simulated the way a cache breakpoint
before the newest message would behave: the prefix (everything but the last message) is
compared with the previous call's prefix on this instance; the shared part is read from the
cache, the rest of the prefix is written, the last message is plain input. Output tokens
are ceil(JSON bytes of the reply content / 4), at least 1; a reply longer than max_tokens
is cut like a real one (text cut to max_tokens*4 bytes, tool calls dropped, stop_reason
"max_tokens", output = max_tokens).
"""

from __future__ import annotations

import difflib
import json
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .ports import ModelCancelled, ModelError, ModelReply, ModelRequest, Usage

POLL_SECONDS = 0.05
DONE_TEXT = "Done."
LEGS = {"task": "task", "wrap-up": "wrapup"}  # purpose -> the id fragment of its tool calls


class ScriptError(ValueError):
    """A script that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Turn:
    text: str
    tool_calls: tuple[tuple[str, dict[str, Any]], ...]


@dataclass(frozen=True)
class ScriptedPass:
    task: tuple[Turn, ...]
    wrap_up: tuple[Turn, ...]
    repeat_last: bool
    judge: str | None
    judge_if: tuple[tuple[str, str], ...] = ()  # (words the goal holds, the reply then)

    def judge_for(self, goal: str) -> str | None:
        for words, reply in self.judge_if:
            if " ".join(words.lower().split()) in goal.lower():
                return reply
        return self.judge

    def turns(self, purpose: str) -> tuple[Turn, ...]:
        return self.task if purpose == "task" else self.wrap_up


class ScriptedModel:
    label = "scripted (offline demo model)"

    def __init__(self, script: dict, *, source: str = "") -> None:
        self.source = source or "<script>"
        self.passes, self.latency = _Parser(self.source).script(script)
        self._last_prefix = b""  # what the previous call "wrote to the cache"
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScriptError(f"{path}: cannot read the script ({getattr(exc, 'strerror', None) or exc})") from None
        try:
            script = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScriptError(f"{path}: not valid YAML: {_yaml_problem(exc)}") from None
        return cls(script, source=str(path))

    def complete(self, request: ModelRequest) -> ModelReply:
        if request.cancelled():
            raise ModelCancelled("the scripted call was cancelled")
        if request.max_tokens < 1:
            raise ModelError(f"max_tokens must be at least 1 (got {request.max_tokens})")
        self._wait(request)
        content, stop_reason = self._content(request)
        content, stop_reason, output = fit(content, stop_reason, request.max_tokens)
        return ModelReply(content=content, stop_reason=stop_reason, usage=self._usage(request, output))

    # -- what to say

    def _content(self, request: ModelRequest) -> tuple[list[dict[str, Any]], str]:
        if request.pass_number < 1:
            raise ModelError(f"{self.source}: pass numbers start at 1 (got {request.pass_number})")
        scripted = self.passes[min(request.pass_number, len(self.passes)) - 1]
        if request.purpose == "judging":
            reply = scripted.judge_for(_goal(request))
            if reply is None:
                raise ModelError(f"{self.source}: pass {request.pass_number} has no judge reply")
            return [{"type": "text", "text": reply}], "end_turn"
        if request.purpose not in LEGS:
            raise ModelError(f"{self.source}: no turns for purpose {request.purpose!r}")
        index = sum(1 for m in request.messages[request.leg_start :] if m.get("role") == "assistant")
        turn = _pick(scripted.turns(request.purpose), index, scripted.repeat_last)
        return _blocks(turn, f"toolu_scripted_{request.pass_number}_{LEGS[request.purpose]}_{index}")

    # -- how long and how much

    def _wait(self, request: ModelRequest) -> None:
        """Simulated latency, cancellable, and never past the deadline (like a real call)."""
        end = time.monotonic() + self.latency
        while (left := end - time.monotonic()) > 0:
            if request.cancelled():
                raise ModelCancelled("the scripted call was cancelled")
            if time.monotonic() >= request.deadline:
                raise ModelError("scripted model: no reply before the deadline")
            time.sleep(min(POLL_SECONDS, left))

    def count_tokens(self, request: ModelRequest) -> int:
        """Exactly the context a call of `request` reports (input + cache write + read)."""
        return math.ceil(sum(map(len, _pieces(request))) / 4)

    def _usage(self, request: ModelRequest, output: int) -> Usage:
        pieces = _pieces(request)
        total = math.ceil(sum(map(len, pieces)) / 4)
        prefix = b"".join(pieces[:-1] if request.messages else pieces)
        with self._lock:
            read = _common_prefix(prefix, self._last_prefix) // 4
            self._last_prefix = prefix
        write = len(prefix) // 4 - read
        return Usage(
            input_tokens=total - read - write, cache_write_tokens=write, cache_read_tokens=read, output_tokens=output
        )


def _goal(request: ModelRequest) -> str:
    """The goal a judge request asks about: the text of its <goal> block (runs/judge.py)."""
    texts = []
    for message in request.messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts += [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    text = "\n".join(texts)
    start, end = text.find("<goal>"), text.find("</goal>")
    return " ".join(text[start + 6 : end].split()) if 0 <= start < end else ""


def _pieces(request: ModelRequest) -> list[bytes]:
    """What the usage arithmetic counts: the system prompt, the tools, each message."""
    return [request.system.encode(), _json(request.tools)] + [_json(m) for m in request.messages]


def _pick(turns: tuple[Turn, ...], index: int, repeat_last: bool) -> Turn:
    if index < len(turns):
        return turns[index]
    if repeat_last and turns:
        return turns[-1]
    return Turn(DONE_TEXT, ())


def _blocks(turn: Turn, id_prefix: str) -> tuple[list[dict[str, Any]], str]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    for k, (name, arguments) in enumerate(turn.tool_calls):
        content.append(
            {"type": "tool_use", "id": f"{id_prefix}_{k}", "name": name, "input": json.loads(json.dumps(arguments))}
        )  # a copy the caller may keep
    return content, ("tool_use" if turn.tool_calls else "end_turn")


def fit(content: list[dict[str, Any]], stop_reason: str, max_tokens: int) -> tuple[list, str, int]:
    """The reply as a model capped at max_tokens would give it, and its output tokens."""
    output = max(1, math.ceil(len(_json(content)) / 4))
    if output <= max_tokens:
        return content, stop_reason, output
    # Generation stops at the cap: the text is cut and the tool calls after it never finish.
    text = "".join(b["text"] for b in content if b["type"] == "text")
    cut = text.encode()[: max_tokens * 4].decode(errors="ignore")
    return ([{"type": "text", "text": cut}] if cut else []), "max_tokens", max_tokens


def _json(value: Any) -> bytes:
    # The same compact form the budget guard measures, so the two agree on sizes.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the shared prefix, by bisection: slices compare in C, a byte loop would not."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


# ---------------------------------------------------------------- validation


class _Parser:
    """Checks a script and builds its passes; every error says where, e.g. passes[0].task[1]."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> ScriptError:
        return ScriptError(f"{self.source}: {where + ': ' if where else ''}{problem}")

    def script(self, script: Any) -> tuple[tuple[ScriptedPass, ...], float]:
        self.mapping(script, "", {"passes", "latency_seconds"}, "the script")
        passes = script.get("passes")
        if not isinstance(passes, list) or not passes:
            raise self.fail("passes", "a non-empty list of passes is required")
        latency = script.get("latency_seconds", 0)
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or latency < 0:
            raise self.fail("latency_seconds", f"must be a number of seconds >= 0 (got {latency!r})")
        return tuple(self.one_pass(p, f"passes[{i}]") for i, p in enumerate(passes)), float(latency)

    def one_pass(self, spec: Any, where: str) -> ScriptedPass:
        self.mapping(spec, where, {"task", "wrap-up", "repeat_last", "judge", "judge_if"}, "a pass")
        repeat_last = spec.get("repeat_last", False)
        if not isinstance(repeat_last, bool):
            raise self.fail(f"{where}.repeat_last", f"must be true or false (got {repeat_last!r})")
        judge = spec.get("judge")
        if judge is not None and not isinstance(judge, str):
            raise self.fail(f"{where}.judge", "must be a string (YES or NO, then a reason)")
        return ScriptedPass(
            self.turns(spec.get("task"), f"{where}.task"),
            self.turns(spec.get("wrap-up"), f"{where}.wrap-up"),
            repeat_last,
            judge,
            self.judge_if(spec.get("judge_if"), f"{where}.judge_if"),
        )

    def judge_if(self, spec: Any, where: str) -> tuple[tuple[str, str], ...]:
        if spec is None:
            return ()
        if not isinstance(spec, list):
            raise self.fail(where, "must be a list of {goal_has, judge}")
        found = []
        for i, item in enumerate(spec):
            self.mapping(item, f"{where}[{i}]", {"goal_has", "judge"}, "a judge_if entry")
            words, reply = item.get("goal_has"), item.get("judge")
            if not isinstance(words, str) or not words.strip():
                raise self.fail(f"{where}[{i}].goal_has", "the words the goal must hold, as a string")
            if not isinstance(reply, str):
                raise self.fail(f"{where}[{i}].judge", "must be a string (YES or NO, then a reason)")
            found.append((words.strip(), reply))
        return tuple(found)

    def turns(self, spec: Any, where: str) -> tuple[Turn, ...]:
        if spec is None:
            return ()
        if not isinstance(spec, list):
            raise self.fail(where, "must be a list of turns")
        return tuple(self.turn(t, f"{where}[{i}]") for i, t in enumerate(spec))

    def turn(self, spec: Any, where: str) -> Turn:
        self.mapping(spec, where, {"text", "tool_calls"}, "a turn")
        text = spec.get("text", "")
        if not isinstance(text, str):
            raise self.fail(f"{where}.text", "must be a string")
        calls = spec.get("tool_calls") or []
        if not isinstance(calls, list):
            raise self.fail(f"{where}.tool_calls", "must be a list of {name, input}")
        if not text and not calls:
            raise self.fail(where, "a turn needs text or tool_calls")
        return Turn(text, tuple(self.call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)))

    def call(self, spec: Any, where: str) -> tuple[str, dict[str, Any]]:
        self.mapping(spec, where, {"name", "input"}, "a tool call")
        name, arguments = spec.get("name"), spec.get("input", {})
        if not isinstance(name, str) or not name:
            raise self.fail(f"{where}.name", "a tool name is required")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise self.fail(f"{where}.input", "must be a mapping of arguments")
        try:
            json.dumps(arguments)
        except (TypeError, ValueError):
            raise self.fail(f"{where}.input", "must be plain JSON data (quote dates and the like)") from None
        return name, arguments

    def mapping(self, spec: Any, where: str, known: set[str], what: str) -> None:
        if not isinstance(spec, dict):
            raise self.fail(where, f"{what} must be a mapping (got {type(spec).__name__})")
        for key in spec:
            if key not in known:
                near = difflib.get_close_matches(str(key), sorted(known), n=1)
                hint = f"; did you mean {near[0]!r}?" if near else f"; known: {', '.join(sorted(known))}"
                raise self.fail(where, f"unknown key {key!r}{hint}")
