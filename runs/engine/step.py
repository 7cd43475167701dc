"""A step's model call (docs/running-loops.md, hard ceiling): sized so that an upper bound of its input plus
its max_tokens fits what the leg has left (counted exactly near the edge), fitted to the spend
quotas, reserved, made, followed by the tools it asks for, and settled in one transaction.

Crash safety: the reservation is the call's *pending* Step (input bound + max_tokens), which
counts against the job at once; the settle writes the real usage together with the
checkpoint (the pass's counters and the turns the step appended). A worker that dies mid-call
leaves a pending step that the next worker settles at its reservation (runs.ledger).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from django.db import transaction

from agents.ports import ModelCancelled, ModelReply, ModelRequest
from budgets.guard import DEFAULT_MAX_OUTPUT, LastCall, input_bound
from runs import events
from runs.conversation import without_images
from runs.engine.call import Called, StepReservation, budgeted_call, call_size, exact_count
from runs.engine.context import Armed, StepContext
from runs.engine.controls import Controls
from runs.engine.quota import QUOTA_CUT, Quota
from runs.engine.result_room import ResultFitter
from runs.engine.seats import leg_effort, leg_model
from runs.engine.tools import ToolRunner
from runs.ledger import Ledger
from runs.models import Run, Step
from runs.states import EventKind, PauseReason

# what a step's settle saves of the pass: its counters, a fixed size whatever the conversation
CHECKPOINT_FIELDS = ["leg_steps", "leg_tokens", "leg_seconds", "tokens_counted", "steps_total"]


class Call:
    """One step of a leg: its model call, its tools, its settle."""

    def __init__(
        self,
        run: Run,
        armed: Armed,
        ledger: Ledger,
        *,
        controls: Controls,
        quota: Quota,
        fitter: ResultFitter,
        tools: ToolRunner,
        pause: Callable[..., None],
    ):
        self.run = run
        self.armed = armed
        self.ledger = ledger
        self.controls = controls
        self.quota = quota
        self.fitter = fitter
        self.tools = tools
        self._pause = pause  # the engine's: the run pauses, this worker lets the run go
        self.delegation = None  # the run agent's sub-agents (runs.engine.delegation), when it may start any

    def make(self, ctx: StepContext, tokens_left: int) -> tuple[ModelReply, int] | None:
        """The step, with the largest max_tokens the leg's `tokens_left` and the quotas allow:
        its reply and that max_tokens, or None when too little is left for a useful answer. A
        reservation a quota refuses raises QuotaRefused (the leg waits and tries again)."""
        bound = input_bound(
            system=self.armed.system,
            tools=ctx.tools,
            messages=ctx.conversation.messages,
            last=self.ledger.last_call(ctx.run_pass),
        )
        count = partial(self._counted_bound, ctx, bound)
        sized = call_size(bound, left=tokens_left, ceiling=DEFAULT_MAX_OUTPUT, count=count)
        if sized.max_tokens is None:
            return None
        reservation = StepReservation(
            self.ledger,
            self.quota,
            ctx.run_pass,
            leg=ctx.leg,
            model=leg_model(self.run, self.armed.spec, ctx.leg),
            message_count=len(ctx.conversation),
            none_known=self.ledger.no_quota_since_settle(),
        )
        try:
            called = budgeted_call(
                model=self.armed.model,
                request=partial(self._request, ctx, ctx.conversation.messages),
                label=ctx.leg,
                sized=sized,
                count=count,
                reservation=reservation,
            )
        except ModelCancelled:
            self._pause(PauseReason.CANCELLED)
        reply = self._after_call(ctx, called, reservation, tokens_left)
        return reply, called.held.max_tokens

    def _counted_bound(self, ctx: StepContext, bound: int) -> int:
        """The exact count (with its margin) where it beats the byte bound, else the bound."""
        last = self.ledger.last_call(ctx.run_pass)
        if last is not None and last.message_count == len(ctx.conversation):
            return bound  # the bound is already an exact count of exactly these turns
        messages = ctx.conversation.messages
        counted = self._count(ctx, messages)
        if counted is None or counted >= bound:
            return bound
        self.ledger.note_count(ctx.run_pass, LastCall(context=counted, message_count=len(messages)))
        return counted

    def _count(self, ctx: StepContext, messages: list) -> int | None:
        """The exact count of the step's call with these messages, or None."""
        return exact_count(self.armed.model, self._request(ctx, messages), exact=self.armed.exact_counts)

    def _request(
        self, ctx: StepContext, messages: list, max_tokens: int = DEFAULT_MAX_OUTPUT, started: float | None = None
    ) -> ModelRequest:
        model = leg_model(self.run, self.armed.spec, ctx.leg)
        return ModelRequest(
            model=model,
            system=self.armed.system,
            messages=messages,
            tools=ctx.tools,
            max_tokens=max_tokens,
            deadline=(time.monotonic() if started is None else started) + ctx.seconds_left,
            purpose=ctx.leg,
            pass_number=ctx.run_pass.number,
            leg_start=ctx.run_pass.leg_start,
            cancelled=self.controls.cancel_requested,
            effort=leg_effort(model, self.armed.spec, ctx.leg),
        )

    def _after_call(
        self, ctx: StepContext, called: Called, reservation: StepReservation, tokens_left: int
    ) -> ModelReply:
        """The tools the reply asks for, their results fitted, and the step settled."""
        reply, step, started = called.reply, called.held.hold, called.started
        if self.delegation is not None and reply.tool_calls:  # what a sub-agent may be given: the leg's rest
            self.delegation.reply_started(ctx, step, reply, left=tokens_left - reply.usage.counted)
        self.fitter.offer_room(ctx, reply)
        if reply.tool_calls:  # a worker lost while they run leaves them here, for the next one to tell
            Step.objects.filter(pk=step.pk).update(tool_calls=reply.tool_calls)
        self.armed.tools.deadline = started + ctx.seconds_left  # a command never runs past the leg's clock
        results, waited = self.tools.run_calls(reply, ctx, step)
        self.tools.capture(step)
        user_turn = self.fitter.fit(ctx, reply, results, partial(self._count, ctx)) if results else []
        if self.quota.cut(reply):
            user_turn = [{"type": "text", "text": QUOTA_CUT}]  # saved with the reply it follows
        # time spent waiting for a person is not the pass's: it stays off every clock
        self._settle(ctx, step, reply, user_turn, time.monotonic() - started - waited, reservation, called.held)
        return reply

    def _settle(
        self, ctx: StepContext, step: Step, reply: ModelReply, user_turn: list[dict], seconds: float, reservation, held
    ) -> None:
        """The step's checkpoint, in one transaction: the turns it appended (and only those),
        the pass's counters, its event, then its tokens (the ledger reads the control back)."""
        usage, run_pass, conversation = reply.usage, ctx.run_pass, ctx.conversation
        conversation.append("assistant", reply.content)
        results = [block for block in user_turn if block.get("type") == "tool_result"]
        if user_turn:
            conversation.append("user", user_turn)
            conversation.drop_old_images()
        run_pass.leg_steps += 1
        run_pass.leg_tokens += usage.counted
        run_pass.leg_seconds += seconds
        run_pass.tokens_counted += usage.counted
        apply_reply(step, reply, seconds)
        step.tool_calls, step.tool_results = reply.tool_calls, [without_images(r) for r in results]
        with transaction.atomic():
            conversation.save()
            run_pass.save(update_fields=CHECKPOINT_FIELDS)
            events.record(
                self.run,
                EventKind.STEP,
                _step_summary(step, usage.counted),
                pass_number=run_pass.number,
                step=step.number,
                leg=step.leg,
                counted=usage.counted,
            )
            reservation.settle(held, usage, clock_seconds=seconds)
        self.controls.read_back()


def apply_reply(step: Step, reply: ModelReply, seconds: float) -> None:
    """What a settled call said onto the step that reserved it (its tokens: the ledger)."""
    step.stop_reason, step.text, step.duration_ms = reply.stop_reason, reply.text, int(seconds * 1000)
    # what the step thought: the blocks stay in the conversation as received; the step keeps
    # their count and text (shown only where RYSH_SHOW_THINKING allows), never subtracted
    # from its output tokens, which already include them
    step.thinking_blocks = len(reply.thinking)
    step.thinking = "\n\n".join(b.get("thinking") or "" for b in reply.thinking).strip()


def _step_summary(step: Step, counted: int) -> str:
    calls = ", ".join(c["name"] for c in step.tool_calls)
    thought = f"; {step.thought}" if step.thinking_blocks else ""
    return f"step {step.number} ({step.leg}): {counted} tokens{thought}" + (f"; {calls}" if calls else "")
