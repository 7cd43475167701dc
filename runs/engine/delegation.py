"""Sub-agents (docs/agent-tools.md): a sub_agent call runs an agent with a fresh conversation, the
tools it was given, and a budget carved out of its caller's before it starts (budgets.carve).

Every call a sub-agent makes is THE budgeted call (runs.engine.call) against its own purse, held
as a pending Step of the run's pass (marked with the sub-agent) like any step, so the ledger
counts it once, the pass's leg counters see it at once and the run's outer total and the team's
quotas hold. The caller's purse is what its leg has left after its own reply (the run's agent)
or what its allotment has left (a sub-agent at depth 1 delegating in turn), less the margin its
next answer needs. A cancel reaches a sub-agent as it reaches the run's agent: between its steps,
during its model call and before each of its tool calls.

Tool calls run one after another on the worker; "at once" is the sub_agent calls of one reply:
the first RYSH_SUBAGENTS_PARALLEL of them run, the others are refused with the numbers.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import transaction

from agents.agent_tools import AgentTools, Delegation
from agents.ports import ModelCancelled, ModelError, ModelReply, ModelRequest, ToolResult
from budgets.carve import ANSWER_CHARS, CarveRefused, Purse, answer_margin
from budgets.guard import DEFAULT_MAX_OUTPUT, LastCall, cut_marker, input_bound
from runs import events
from runs.conversation import tool_history, without_images
from runs.engine.call import StepReservation, budgeted_call, call_size, counted_bound
from runs.engine.context import Armed, StepContext
from runs.engine.controls import ApprovalGate, Controls
from runs.engine.quota import Quota
from runs.engine.tools import ToolRunner
from runs.ledger import Ledger
from runs.models import Control, Run, Step
from runs.states import EventKind
from spend.quotas import QuotaRefused

SUB_STEPS = 25  # a sub-agent's steps at most
RESULT_CHARS = 20_000  # a tool result a sub-agent reads, at most (less when its purse is small)
SUB_SYSTEM = (
    "You are a sub-agent of a budgeted agent run. You do not see the conversation of the agent that "
    "started you: the task below is everything you are told. Work on it with your tools, then answer "
    "with a short final report, without a tool call: that report is all that goes back. Your budget is "
    "{budget:,} tokens and {steps} steps; when it runs out you are stopped."
)
CHECKPOINT = ["leg_tokens", "tokens_counted", "steps_total"]


class QuotaStop(Exception):
    """A quota has no room for a sub-agent's call: the sub-agent ends, the run does not pause."""


@dataclass
class Level:
    """One agent that may delegate: what it may spend, and the reply whose tool calls run now."""

    purse: Purse
    depth: int
    label: str  # "" the run's agent, "sub-1", "sub-1.2"
    step: Step | None = None  # the step whose reply asked (the sub-agents' parent_step)
    margin: int = 0
    asked: int = 0  # sub_agent calls in the reply in hand
    named: int = 0  # sub-agents this agent started so far (their labels)


class Delegator:
    """The delegate attached to one agent's tools port (agents.agent_tools)."""

    def __init__(self, room: SubAgents, level: Level, ctx: StepContext | None = None):
        self.room, self.level, self.ctx = room, level, ctx

    def reply_started(self, ctx: StepContext, step: Step, reply: ModelReply, left: int | None = None) -> None:
        """A reply's tool calls are about to run: the purse is what the agent has `left` once
        this reply is paid (the run's agent: its leg; a sub-agent: its own purse as it is)."""
        level = self.level
        if left is not None:
            level.purse = Purse(max(0, left), "this leg")
        level.step, level.asked, self.ctx = step, 0, ctx
        calls = sum(1 for call in reply.tool_calls if call["name"] == "sub_agent")
        usage = reply.usage
        level.margin = answer_margin(
            context=usage.context, output=usage.output_tokens, answers=min(calls, self.room.parallel)
        )

    def __call__(self, request: Delegation) -> ToolResult:
        level = self.level
        level.asked += 1
        if level.asked > self.room.parallel:
            return ToolResult(
                f"sub_agent: refused: this reply asked for sub-agent number {level.asked}; at most "
                f"{self.room.parallel} run at once (RYSH_SUBAGENTS_PARALLEL). Ask again for the rest.",
                is_error=True,
            )
        label = f"{level.label or 'sub'}{'.' if level.label else '-'}{level.named + 1}"
        try:
            purse = level.purse.carve(request.budget, margin=level.margin, holder=label)
        except CarveRefused as refused:
            return ToolResult(f"{refused}; no sub-agent was started", is_error=True)
        level.named += 1
        try:
            return SubAgent(self.room, request, Level(purse, request.depth, label), self).run()
        finally:
            level.purse.give_back(purse)


class SubAgents:
    """A run's sub-agents: what every one of them shares (the run, its model, ledger, controls)."""

    def __init__(self, run: Run, armed: Armed, ledger: Ledger, controls: Controls, *, parallel: int | None = None):
        self.run, self.armed, self.ledger, self.controls = run, armed, ledger, controls
        self.parallel = settings.RYSH_SUBAGENTS_PARALLEL if parallel is None else parallel
        self.quota = Quota(run, pause=self._quota_stop)

    @staticmethod
    def _quota_stop(reason: str, detail: str = "", **data) -> None:
        raise QuotaStop(detail or reason)

    def attach(self, tools) -> Delegator | None:
        """The run agent's delegate, when its tools port offers sub_agent (task and code runs)."""
        if not isinstance(tools, AgentTools) or not tools.sub_agents:
            return None
        # a continued run goes on numbering its sub-agents where the last worker left off
        started = Step.objects.filter(run_pass__run=self.run).exclude(agent="").exclude(agent__contains=".")
        named = started.values("agent").distinct().count()
        tools.delegate = Delegator(self, Level(Purse(0), depth=0, label="", named=named))
        return tools.delegate


@dataclass
class Talk:
    """A sub-agent's own conversation (in memory: a worker lost mid-way re-runs the parent's step)."""

    messages: list

    def call_history(self) -> list[str]:
        return tool_history(self.messages)


class SubAgent:
    """One sub-agent, from its task to its final answer (or its budget's, steps' or run's end)."""

    def __init__(self, room: SubAgents, request: Delegation, level: Level, parent: Delegator):
        self.room, self.request, self.level, self.parent = room, request, level, parent
        inner = room.armed.tools.inner if isinstance(room.armed.tools, AgentTools) else room.armed.tools
        own = frozenset(request.tools) - {"sub_agent"}
        self.tools = AgentTools(inner, sub_agents="sub_agent" in request.tools, depth=request.depth, only=own)
        self.delegator = Delegator(room, level)
        if self.tools.sub_agents:
            self.tools.delegate = self.delegator
        self.armed = dataclasses.replace(room.armed, tools=self.tools)
        self.runner = ToolRunner(room.run, self.armed, room.controls, ApprovalGate(room.run, self.armed, room.controls))
        self.system = SUB_SYSTEM.format(budget=level.purse.left, steps=SUB_STEPS)
        self.talk = Talk([{"role": "user", "content": [{"type": "text", "text": request.task}]}])
        self.last: LastCall | None = None
        self.steps = self.spent = 0
        self.budget = level.purse.left  # carved: its own and its sub-agents' spend stays within

    def run(self) -> ToolResult:
        ctx = self.parent.ctx
        self._event(f"{self.level.label} started (depth {self.request.depth}): {self.level.purse.left:,} tokens")
        room_chars = self.tools.room_chars  # the caller's, given back for its other tool calls
        try:
            answer = self._steps(ctx)
        except QuotaStop as stop:
            answer = ToolResult(f"stopped: a spend quota has no room for its next call ({stop})", is_error=True)
        except QuotaRefused as refused:
            answer = ToolResult(f"stopped: a spend quota has no room for its next call ({refused})", is_error=True)
        finally:
            self.tools.room_chars = room_chars
        tally = f"[{self.level.label}: {self.steps} step(s), {self.spent:,} tokens]"
        self._event(f"{self.level.label} ended: {self.steps} step(s), {self.spent:,} tokens", ended=True)
        return ToolResult(f"{self.level.label}: {answer.content}\n{tally}", is_error=answer.is_error)

    def _steps(self, ctx: StepContext) -> ToolResult:
        said = ""
        for _ in range(SUB_STEPS):
            if self.room.controls.read(force=True) == Control.CANCEL:
                return ToolResult("stopped: the run was cancelled", is_error=True)
            reply = self._call(ctx)
            if isinstance(reply, ToolResult):
                return reply
            said = reply.text or said
            if not reply.tool_calls:
                return ToolResult(_cut(said or "(no answer)", ANSWER_CHARS), is_error=reply.stop_reason == "refusal")
        return ToolResult(f"stopped: its {SUB_STEPS} steps were used without a final answer; last said: {said}", True)

    def _call(self, ctx: StepContext) -> ModelReply | ToolResult:
        """One step: sized to the purse, reserved, made, its tools run, settled."""
        room, purse, messages = self.room, self.level.purse, self.talk.messages
        specs = self.tools.specs()
        bound = input_bound(system=self.system, tools=specs, messages=messages, last=self.last)
        count = partial(self._count, specs, bound)
        sized = call_size(bound, left=purse.left, ceiling=DEFAULT_MAX_OUTPUT, count=count)
        if sized.max_tokens is None:
            return ToolResult(f"stopped: its budget is spent ({purse.left:,} tokens left, too few for a call)", True)
        reservation = StepReservation(
            room.ledger,
            room.quota,
            ctx.run_pass,
            leg=ctx.leg,
            model=room.run.executor_model,
            message_count=len(messages),
            marks={"agent": self.level.label, "parent_step": self.parent.level.step},
        )
        try:
            called = budgeted_call(
                model=room.armed.model,
                request=partial(self._request, ctx, specs),
                label="sub-agent",
                sized=sized,
                count=count,
                reservation=reservation,
            )
        except ModelCancelled:
            self._counted(ctx, self._held_step(reservation))
            return ToolResult("stopped: the run was cancelled during its model call", is_error=True)
        except ModelError as exc:
            return ToolResult(f"stopped: the model could not answer: {exc}", is_error=True)
        return self._after(ctx, called, reservation, specs)

    def _held_step(self, reservation) -> Step:
        return Step.objects.filter(run_pass=reservation.run_pass, agent=self.level.label).order_by("-number").first()

    def _request(self, ctx: StepContext, specs: list, max_tokens: int = DEFAULT_MAX_OUTPUT, started=None):
        return ModelRequest(
            model=self.room.run.executor_model,
            system=self.system,
            messages=self.talk.messages,
            tools=specs,
            max_tokens=max_tokens,
            deadline=(time.monotonic() if started is None else started) + ctx.seconds_left,
            purpose="sub-agent",
            pass_number=ctx.run_pass.number,
            cancelled=self.room.controls.cancel_requested,
        )

    def _count(self, specs: list, bound: int) -> int:
        return counted_bound(self.room.armed.model, self._request(self.parent.ctx, specs), bound)

    def _after(self, ctx: StepContext, called, reservation: StepReservation, specs: list) -> ModelReply:
        reply, step = called.reply, called.held.hold
        usage = reply.usage
        self.level.purse.spend(usage.counted)
        if self.tools.offers_sub_agent:
            self.delegator.reply_started(ctx, step, reply)
        self.tools.room_chars = min(RESULT_CHARS, max(1000, self.level.purse.left))  # ~4 characters a token
        sub_ctx = StepContext(ctx.run_pass, ctx.leg, self.talk, specs, ctx.seconds_left)
        results, _ = self.runner.run_calls(reply, sub_ctx, step) if reply.tool_calls else ([], 0.0)
        results = [_cut_result(r, self.tools.room_chars or RESULT_CHARS) for r in results]
        self.talk.messages.append({"role": "assistant", "content": reply.content})
        if results:
            self.talk.messages.append({"role": "user", "content": results})
        self.last = LastCall(context=usage.context, message_count=len(self.talk.messages) - (2 if results else 1))
        step.stop_reason, step.text = reply.stop_reason, reply.text
        step.duration_ms = int((time.monotonic() - called.started) * 1000)
        step.tool_calls, step.tool_results = reply.tool_calls, [without_images(r) for r in results]
        run_pass = ctx.run_pass
        run_pass.leg_tokens += usage.counted  # the caller's leg sees it at once
        run_pass.tokens_counted += usage.counted
        with transaction.atomic():
            run_pass.save(update_fields=CHECKPOINT)
            calls = "".join(f"; {c['name']}" for c in reply.tool_calls)
            message = f"step {step.number} ({self.level.label}): {usage.counted} tokens{calls}"
            events.record(self.room.run, EventKind.STEP, message, pass_number=run_pass.number, step=step.number)
            # its clock is the calling step's (that step's seconds hold the whole tool call)
            reservation.settle(called.held, usage, clock_seconds=0.0)
        self.steps += 1
        self.spent += usage.counted
        return reply

    def _counted(self, ctx: StepContext, step: Step | None) -> None:
        """A call cut by a cancel was counted at its reservation: the purse and the leg too."""
        if step is None:
            return
        self.level.purse.spend(min(step.counted_tokens, self.level.purse.left))
        ctx.run_pass.leg_tokens += step.counted_tokens
        ctx.run_pass.tokens_counted += step.counted_tokens
        ctx.run_pass.save(update_fields=CHECKPOINT)
        self.steps += 1
        self.spent += step.counted_tokens

    def _event(self, message: str, ended: bool = False) -> None:
        level = self.level
        parent = self.parent.level.step
        events.record(
            self.room.run,
            EventKind.SUB_AGENT,
            message,
            agent=level.label,
            depth=self.request.depth,
            parent_step=parent.number if parent else None,
            ended=ended,
            budget=self.budget,
            tokens=self.spent,
        )


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + "\n" + cut_marker(len(text), chars, " (a sub-agent's answer)")


def _cut_result(result: dict, chars: int) -> dict:
    content = result.get("content")
    if isinstance(content, str) and len(content) > chars:
        return {**result, "content": _cut(content, chars)}
    return result
