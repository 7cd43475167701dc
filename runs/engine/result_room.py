"""The room a step's tool results get near the edge: results that fit what the leg has left
(the pure arithmetic is in runs.engine.fitting). Tools read no more than the next call could take,
and what still does not fit is cut (or earlier results cleared) so the next call has room for a
useful answer."""

from __future__ import annotations

import math
from collections.abc import Callable

from agents.ports import ModelReply
from budgets.guard import MIN_USEFUL_OUTPUT, REQUEST_OVERHEAD, JobSpent, LastCall, input_bound, leg_left, size
from runs.arming import reminder
from runs.conversation import Conversation
from runs.engine import fitting
from runs.engine.context import Armed, StepContext
from runs.ledger import Ledger
from runs.models import Phase


class ResultFitter:
    """The user turn a step appends (its tool results, the reminder at the interval), sized
    to the room the leg has left once the step's call is settled."""

    def __init__(self, armed: Armed, ledger: Ledger):
        self.armed = armed
        self.plan = armed.plan
        self.ledger = ledger

    def tokens_left_after(self, ctx: StepContext, reply: ModelReply) -> int:
        """What the leg may still spend once this call is settled."""
        spent = self.ledger.spent()
        run_pass = ctx.run_pass
        return leg_left(
            self.plan,
            ctx.leg,
            JobSpent(tokens=spent.tokens + reply.usage.counted, seconds=spent.seconds),
            leg_steps=run_pass.leg_steps + 1,
            leg_tokens=run_pass.leg_tokens + reply.usage.counted,
            leg_seconds=run_pass.leg_seconds,
        ).tokens

    def offer_room(self, ctx: StepContext, reply: ModelReply) -> None:
        """Tools that read pages or files read no more than the next call could take (about 4
        characters a token; what still does not fit is cut exactly afterwards)."""
        if not self.armed.exact_counts:
            return
        # earlier tool results can be cleared to make room (see fit), so the room is what is
        # left once the rest of the conversation is paid for, not its whole context
        kept = size(self.armed.system) + size(self.armed.tools.specs()) + size(reply.content) + REQUEST_OVERHEAD
        room = self.tokens_left_after(ctx, reply) - MIN_USEFUL_OUTPUT - kept // 4
        self.armed.tools.room_chars = max(0, room) * 4

    def fit(
        self, ctx: StepContext, reply: ModelReply, results: list[dict], count: Callable[[list], int | None]
    ) -> list[dict]:
        """The user turn this step appends (its tool results, and the reminder at the
        interval), its results cut where the next call would otherwise have no room. `count`
        is the provider's exact count (margin included) of the next call with these messages,
        or None."""
        left = self.tokens_left_after(ctx, reply) - MIN_USEFUL_OUTPUT
        if not self.armed.exact_counts:
            return self._user_turn(ctx, reply, results)
        conversation, tools = ctx.conversation, ctx.tools
        base = LastCall(context=reply.usage.context, message_count=len(conversation))
        # bytes per token of what this call sent: an exact fact to estimate with, never to bound
        sent = size(self.armed.system) + size(tools) + size(conversation.messages)
        per_token = sent / reply.usage.context if reply.usage.context else None
        counted = None
        for _attempt in range(4):  # estimate, make room, count to be sure (once, usually)
            user_turn = self._user_turn(ctx, reply, results)
            messages = _with_turns(conversation, reply, user_turn)
            bound = input_bound(system=self.armed.system, tools=tools, messages=messages, last=base)
            if bound <= left:
                return user_turn
            sent = size(self.armed.system) + size(tools) + size(messages)
            estimate = counted if counted is not None else math.ceil(sent / per_token) if per_token else None
            if estimate is None or estimate <= left:
                counted = count(messages)
                if counted is not None and counted <= left:
                    self.ledger.note_count(ctx.run_pass, LastCall(context=counted, message_count=len(messages)))
                    return user_turn
                estimate = counted
            if estimate is None:
                break  # nothing exact to go by: the byte bound decides below
            chars = fitting.chars_for_tokens(estimate - left, bytes_total=sent, counted=estimate)
            counted = None  # what changes now must be counted again
            if conversation.clear_old_results(chars):
                continue  # earlier results made room for this one
            if not any(n for _, _, n in fitting.texts_of(results)):
                return user_turn  # nothing left to cut: the next step ends the leg, as before
            results = fitting.cut_results(results, chars)
        # estimates did not settle it: cut by the byte bound, which holds whatever the count
        user_turn = self._user_turn(ctx, reply, results)
        messages = _with_turns(conversation, reply, user_turn)
        bound = input_bound(system=self.armed.system, tools=tools, messages=messages, last=base)
        if bound > left:
            user_turn = self._user_turn(ctx, reply, fitting.cut_results(results, bound - left))
        return user_turn

    def _user_turn(self, ctx: StepContext, reply: ModelReply, results: list[dict]) -> list[dict]:
        content = list(results)
        leg = ctx.leg
        if (ctx.run_pass.leg_steps + 1) % self.plan.interval == 0:
            share = self.plan.split.task if leg == Phase.TASK else self.plan.split.takeover
            content.append(
                {
                    "type": "text",
                    "text": reminder(
                        str(self.armed.output_dir),
                        left=self.tokens_left_after(ctx, reply),
                        allotment=share.tokens if share else None,
                        wrap_up_next=leg == Phase.TASK and self.plan.split.takeover is not None,
                    ),
                }
            )
        return content


def _with_turns(conversation: Conversation, reply: ModelReply, user_turn: list[dict]) -> list[dict]:
    """The conversation as the next call would send it."""
    return [
        *conversation.messages,
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": user_turn},
    ]
