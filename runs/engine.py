"""The do/while state machine (SPEC §3–§4) behind two ports: a model and a set of tools.

It knows neither Anthropic nor any browser. It writes Run/Pass/Step rows and RunEvents, keeps
the tokens through runs.ledger and the conversation through runs.conversation, and reads
control requests (stop, cancel, land now) that people write on the Run between steps and
while a model call is in flight.

Crash safety: before each model call its Step is written as *pending* with its reservation
(input bound + max_tokens), which counts against the job at once; after the call one
transaction settles it to the real usage together with the checkpoint (the pass's counters
and the turns the step appended). A worker that dies mid-call leaves a pending step that the
next worker settles at its reservation, so the ceiling holds and no token is counted twice
(one ledger entry per step).
"""

from __future__ import annotations

import logging
import math
import time
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from agents.ports import ModelCancelled, ModelError, ModelReply, ModelRequest
from budgets.efforts import takes_effort
from budgets.guard import (
    DEFAULT_MAX_OUTPUT,
    MIN_USEFUL_OUTPUT,
    REQUEST_OVERHEAD,
    JobSpent,
    LastCall,
    clamp_max_tokens,
    input_bound,
    leg_left,
    size,
)
from budgets.plan import JUDGE_MAX_TOKENS
from catalogue.recipe import render
from runs import events, fitting, snapshots
from runs import judge as judging
from runs.arming import reminder
from runs.conversation import Conversation, call_identity, tool_result, without_images
from runs.engine_controls import CONTROL_POLL_SECONDS, ApprovalGate, Controls, keep_stop
from runs.engine_parts import Armed, Paused
from runs.engine_passes import Passes
from runs.engine_quota import QUOTA_CUT, Quota
from runs.ledger import Ledger
from runs.models import Control, Pass, PassStop, Phase, Run, RunState, Step, StepStatus
from runs.report import write_report
from runs.signals import run_finished, run_paused
from spend.quotas import QuotaRefused

__all__ = ["CONTROL_POLL_SECONDS", "Armed", "Engine", "Paused", "finish_run", "pause_run"]

log = logging.getLogger(__name__)

BUDGET_STOPS = (PassStop.STEPS, PassStop.TIME, PassStop.TOKENS, PassStop.LANDED)
LOOP_WINDOW = 20  # loop detection: the last 20 tool calls of the pass...
LOOP_REPEATS = 3  # ...may hold the same call (name and input) at most 3 times
# what a step's settle saves of the pass: its counters, a fixed size whatever the conversation
CHECKPOINT_FIELDS = ["leg_steps", "leg_tokens", "leg_seconds", "tokens_counted", "steps_total"]


class Engine:
    def __init__(self, run: Run, armed: Armed):
        self.run = run
        self.armed = armed
        self.plan = armed.plan
        self.ledger = Ledger(run)
        self.passes = Passes(run, armed)
        self.controls = Controls(run)
        self.gate = ApprovalGate(run, armed, self.controls)
        self.quota = Quota(run, pause=self._pause)

    @property
    def conversation(self) -> Conversation | None:
        """The current pass's conversation, while it runs."""
        return self.passes.conversation

    # -- the loop -------------------------------------------------------------------------

    def go(self) -> None:
        try:
            while self._one_pass():
                pass
        except Paused:
            return
        except (InterfaceError, OperationalError):
            # The database went away under the engine (a dropped connection, a restart): nothing
            # can be written now, and nothing is wrong with the run. Leave it `running` with its
            # checkpoint; its heartbeat stops with this worker's task, and the sweeper continues
            # it once the database answers (worker lost -> continued).
            log.exception("run %s: the database failed; the sweeper continues it", self.run.pk)
            raise
        except Exception as exc:  # the run must land with a cause, whatever broke
            log.exception("run %s failed", self.run.pk)
            self._finish(f"error: {type(exc).__name__}: {exc}")

    def _one_pass(self) -> bool:
        """Advance the current pass to its end; True when another pass should start."""
        run_pass = self.passes.current()
        if run_pass.ended_at is None:
            self._legs(run_pass)
        if PassStop.REFUSED in (run_pass.task_stop, run_pass.wrap_up_stop):
            self._finish(f"error: the model refused to go on (stop reason: refusal) in pass {run_pass.number}")
            return False
        if self._stop_requested():
            return False
        if not self.plan.loop_enabled:
            self._finish("done")
            return False
        if not run_pass.verdict:
            verdict = self._judge(run_pass)
            if verdict is None:
                return False
        if run_pass.verdict == "YES":
            self._finish("fulfilled")
            return False
        return self._next_pass_allowed(run_pass)

    def _stop_requested(self) -> bool:
        """A stop asked for at any time before the next pass: the run ends without iterating."""
        if self.controls.read(force=True) == Control.STOP:
            self._finish("stopped by user")
            return True
        return False

    def _next_pass_allowed(self, run_pass: Pass) -> bool:
        if self._stop_requested():
            return False
        if run_pass.number >= self.plan.passes:
            self._finish(f"unfulfilled: the {self.plan.passes}-pass cap is reached")
            return False
        if self.plan.outer_seconds and self.run.seconds_used >= self.plan.outer_seconds:
            self._finish("the loop's time cap elapsed")
            return False
        left = self.plan.outer_tokens - self.run.tokens_counted
        if self.plan.outer_tokens and left < REQUEST_OVERHEAD + MIN_USEFUL_OUTPUT:
            self._finish("budget exhausted")
            return False
        self.passes.start(run_pass.number + 1, previous=run_pass)
        return True

    # -- passes ---------------------------------------------------------------------------

    def _legs(self, run_pass: Pass) -> None:
        if run_pass.phase == Phase.TASK:
            stop = self._leg(run_pass, Phase.TASK)
            run_pass.task_stop = stop
            if stop in BUDGET_STOPS and self.plan.split.takeover and not run_pass.takeover_used:
                self.passes.begin_wrap_up(run_pass, stop)
            else:
                self.passes.end(run_pass)
                return
        if run_pass.phase == Phase.WRAP_UP:
            run_pass.wrap_up_stop = self._leg(run_pass, Phase.WRAP_UP)
            self.passes.end(run_pass)

    def _evidence(self, run_pass: Pass) -> list[tuple[str, str]]:
        """What the judge reads beside the result when the tools port has more to show (a
        coding pass: its final answer and the diff stat of its working copy)."""
        evidence = getattr(self.armed.tools, "judge_evidence", None)
        if evidence is None:
            return []
        answer = (
            Step.objects.filter(run_pass=run_pass)
            .exclude(leg=Phase.JUDGING)
            .exclude(text="")
            .order_by("-number")
            .values_list("text", flat=True)
            .first()
        )
        return [("final_answer", answer or "(the pass ended without a final answer)"), *evidence(run_pass.number)]

    # -- a leg: steps until the model is done or a ceiling is hit --------------------------

    def _leg(self, run_pass: Pass, leg: str) -> str:
        self.controls.leg_started()
        while True:
            control = self.controls.before_step()
            if control == Control.CANCEL:
                self._pause("cancelled")
            if control == Control.LAND and leg == Phase.TASK:
                return PassStop.LANDED
            left = leg_left(
                self.plan,
                leg,
                self.ledger.spent(),
                leg_steps=run_pass.leg_steps,
                leg_tokens=run_pass.leg_tokens,
                leg_seconds=run_pass.leg_seconds,
            )
            if left.steps <= 0:
                return PassStop.STEPS
            if left.seconds <= 0:
                return PassStop.TIME
            tools = self.armed.tools.specs()
            bound = input_bound(
                system=self.armed.system,
                tools=tools,
                messages=self.conversation.messages,
                last=self.ledger.last_call(run_pass),
            )
            max_tokens = clamp_max_tokens(left.tokens, bound)
            counted = fitting.worth_counting(max_tokens, DEFAULT_MAX_OUTPUT)
            if counted:
                bound = self._counted_bound(run_pass, leg, tools, bound, left.seconds)
                max_tokens = clamp_max_tokens(left.tokens, bound)
            if max_tokens is None:
                return PassStop.TOKENS
            recount = None if counted else partial(self._counted_bound, run_pass, leg, tools, bound, left.seconds)
            max_tokens, applying, bound = self.quota.fit(bound, max_tokens, self.run.executor_model, recount)
            try:
                reply = self._call(run_pass, leg, tools, max_tokens, bound, left.seconds, applying)
            except QuotaRefused as refused:
                self.quota.wait(refused, self.run.executor_model)
                continue
            self.quota.reserved()
            if reply.stop_reason == "refusal":
                return PassStop.REFUSED  # the pass ends and the run says why (_one_pass)
            if reply.stop_reason == "model_context_window_exceeded":
                return PassStop.TOKENS  # out of room like out of tokens: the wrap-up may take over
            if reply.stop_reason == "pause_turn":
                continue  # the same turn goes on: its partial content goes back, no user text
            if not reply.tool_calls:
                if self.quota.cut(reply):
                    continue  # not a budget stop and not done: the model goes on after the note
                # cut short by a max_tokens the budget clamped: that is a budget stop
                if reply.stop_reason == "max_tokens" and max_tokens < DEFAULT_MAX_OUTPUT:
                    return PassStop.TOKENS
                return PassStop.DONE
            self._after_tool_step(run_pass)

    def _counted_bound(self, run_pass: Pass, leg: str, tools: list, bound: int, seconds_left: float) -> int:
        """The exact count (with its margin) where it beats the byte bound, else the bound."""
        last = self.ledger.last_call(run_pass)
        if last is not None and last.message_count == len(self.conversation):
            return bound  # the bound is already an exact count of exactly these turns
        messages = self.conversation.messages
        counted = self._count(self._request(run_pass, leg, tools, messages, seconds_left))
        if counted is None or counted >= bound:
            return bound
        self.ledger.note_count(run_pass, LastCall(context=counted, message_count=len(messages)))
        return counted

    def _count(self, request: ModelRequest) -> int | None:
        """The provider's exact input count, margin included, or None (the byte bound stands)."""
        count = getattr(self.armed.model, "count_tokens", None)
        if not self.armed.exact_counts or count is None:
            return None
        counted = count(request)
        return None if counted is None else fitting.with_margin(counted)

    def _request(self, run_pass: Pass, leg: str, tools: list, messages: list, seconds_left: float) -> ModelRequest:
        return ModelRequest(
            model=self.run.executor_model,
            system=self.armed.system,
            messages=messages,
            tools=tools,
            max_tokens=DEFAULT_MAX_OUTPUT,
            deadline=time.monotonic() + seconds_left,
            purpose=leg,
            pass_number=run_pass.number,
            leg_start=run_pass.leg_start,
            cancelled=self.controls.cancel_requested,
            effort=self._effort(),
        )

    def _effort(self) -> str | None:
        """The recipe's effort, for a model that takes it (budgets.efforts); else none."""
        effort = self.armed.spec.effort
        return effort if effort and takes_effort(self.run.executor_model) else None

    def _after_tool_step(self, run_pass: Pass) -> None:
        interval = self.plan.interval
        if run_pass.leg_steps % interval == 0 and not self.plan.auto_continue:
            self._pause("step cap")

    def _call(
        self,
        run_pass: Pass,
        leg: str,
        tools: list,
        max_tokens: int,
        bound: int,
        seconds_left: float,
        applying: list | None = None,
    ) -> ModelReply:
        step = self.ledger.reserve(
            run_pass,
            leg=leg,
            model=self.run.executor_model,
            max_tokens=max_tokens,
            bound=bound,
            message_count=len(self.conversation),
            applying=applying,
        )
        started = time.monotonic()
        request = ModelRequest(
            model=self.run.executor_model,
            system=self.armed.system,
            messages=self.conversation.messages,
            tools=tools,
            max_tokens=max_tokens,
            deadline=started + seconds_left,
            purpose=leg,
            pass_number=run_pass.number,
            leg_start=run_pass.leg_start,
            cancelled=self.controls.cancel_requested,
            effort=self._effort(),
        )
        try:
            reply = self.armed.model.complete(request)
        except ModelCancelled:
            self.ledger.settle_reserved(step, StepStatus.CANCELLED, time.monotonic() - started)
            self._pause("cancelled")
        except ModelError as exc:
            self.ledger.settle_failed(step, str(exc), time.monotonic() - started)
            raise
        self._offer_room(run_pass, leg, reply)
        if hasattr(self.armed.tools, "deadline"):  # a command never runs past the leg's clock
            self.armed.tools.deadline = started + seconds_left
        results, waited = self._run_tools(reply, run_pass, step)
        self._capture(step)
        user_turn = self._fit_results(run_pass, leg, tools, reply, results, seconds_left) if results else []
        if self.quota.cut(reply):
            user_turn = [{"type": "text", "text": QUOTA_CUT}]  # saved with the reply it follows
        # time spent waiting for a person is not the pass's: it stays off every clock
        self._settle(run_pass, step, reply, user_turn, time.monotonic() - started - waited)
        return reply

    # -- near the edge: tool results that fit what the leg has left ---------------------

    def _tokens_left_after(self, run_pass: Pass, leg: str, reply: ModelReply) -> int:
        """What the leg may still spend once this call is settled."""
        spent = self.ledger.spent()
        return leg_left(
            self.plan,
            leg,
            JobSpent(tokens=spent.tokens + reply.usage.counted, seconds=spent.seconds),
            leg_steps=run_pass.leg_steps + 1,
            leg_tokens=run_pass.leg_tokens + reply.usage.counted,
            leg_seconds=run_pass.leg_seconds,
        ).tokens

    def _offer_room(self, run_pass: Pass, leg: str, reply: ModelReply) -> None:
        """Tools that read pages or files read no more than the next call could take (about 4
        characters a token; what still does not fit is cut exactly afterwards)."""
        if not self.armed.exact_counts or not hasattr(self.armed.tools, "room_chars"):
            return
        # earlier tool results can be cleared to make room (see _fit_results), so the room is
        # what is left once the rest of the conversation is paid for, not its whole context
        kept = size(self.armed.system) + size(self.armed.tools.specs()) + size(reply.content) + REQUEST_OVERHEAD
        room = self._tokens_left_after(run_pass, leg, reply) - MIN_USEFUL_OUTPUT - kept // 4
        self.armed.tools.room_chars = max(0, room) * 4

    def _fit_results(
        self, run_pass: Pass, leg: str, tools: list, reply: ModelReply, results: list[dict], seconds_left: float
    ) -> list[dict]:
        """The user turn this step appends (its tool results, and the reminder at the
        interval), its results cut where the next call would otherwise have no room."""
        left = self._tokens_left_after(run_pass, leg, reply) - MIN_USEFUL_OUTPUT
        if not self.armed.exact_counts:
            return self._user_turn(run_pass, leg, reply, results)
        base = LastCall(context=reply.usage.context, message_count=len(self.conversation))
        # bytes per token of what this call sent: an exact fact to estimate with, never to bound
        sent = size(self.armed.system) + size(tools) + size(self.conversation.messages)
        per_token = sent / reply.usage.context if reply.usage.context else None
        counted = None
        for _attempt in range(4):  # estimate, make room, count to be sure (once, usually)
            turn = self._user_turn(run_pass, leg, reply, results)
            messages = self._with_turns(reply, turn)
            bound = input_bound(system=self.armed.system, tools=tools, messages=messages, last=base)
            if bound <= left:
                return turn
            sent = size(self.armed.system) + size(tools) + size(messages)
            estimate = counted if counted is not None else math.ceil(sent / per_token) if per_token else None
            if estimate is None or estimate <= left:
                counted = self._count(self._request(run_pass, leg, tools, messages, seconds_left))
                if counted is not None and counted <= left:
                    self.ledger.note_count(run_pass, LastCall(context=counted, message_count=len(messages)))
                    return turn
                estimate = counted
            if estimate is None:
                break  # nothing exact to go by: the byte bound decides below
            chars = fitting.chars_for_tokens(estimate - left, bytes_total=sent, counted=estimate)
            counted = None  # what changes now must be counted again
            if self.conversation.clear_old_results(chars):
                continue  # earlier results made room for this one
            if not any(n for _, _, n in fitting.texts_of(results)):
                return turn  # nothing left to cut: the next step ends the leg, as before
            results = fitting.cut_results(results, chars)
        # estimates did not settle it: cut by the byte bound, which holds whatever the count
        turn = self._user_turn(run_pass, leg, reply, results)
        bound = input_bound(system=self.armed.system, tools=tools, messages=self._with_turns(reply, turn), last=base)
        if bound > left:
            turn = self._user_turn(run_pass, leg, reply, fitting.cut_results(results, bound - left))
        return turn

    def _with_turns(self, reply: ModelReply, user_turn: list[dict]) -> list[dict]:
        """The conversation as the next call would send it."""
        return [
            *self.conversation.messages,
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": user_turn},
        ]

    def _user_turn(self, run_pass: Pass, leg: str, reply: ModelReply, results: list[dict]) -> list[dict]:
        content = list(results)
        if (run_pass.leg_steps + 1) % self.plan.interval == 0:
            share = self.plan.split.task if leg == Phase.TASK else self.plan.split.takeover
            content.append(
                {
                    "type": "text",
                    "text": reminder(
                        str(self.armed.output_dir),
                        left=self._tokens_left_after(run_pass, leg, reply),
                        allotment=share.tokens if share else None,
                        wrap_up_next=leg == Phase.TASK and self.plan.split.takeover is not None,
                    ),
                }
            )
        return content

    def _run_tools(self, reply: ModelReply, run_pass: Pass, step: Step) -> tuple[list[dict], float]:
        """Run the reply's tool calls; returns the results and the seconds spent waiting for
        people to answer approvals."""
        results, waited = [], 0.0
        history = self.conversation.call_history()
        for call in reply.tool_calls:
            if self.controls.read(force=True) == Control.CANCEL:
                results.append(tool_result(call["id"], "not run: the run was cancelled", True))
                continue
            identity = call_identity(call)
            repeats = history[-LOOP_WINDOW:].count(identity)
            history.append(identity)
            if repeats >= LOOP_REPEATS:
                results.append(
                    tool_result(
                        call["id"],
                        (
                            f"refused: this exact call ({call['name']} with the same input) is already "
                            f"{repeats} of your last {LOOP_WINDOW} tool calls. You are going in circles: "
                            "change your approach, or save what you have and finish."
                        ),
                        True,
                    )
                )
                continue
            held = self.gate.hold(call, run_pass, step)
            if held is not None:
                refused, seconds = held
                waited += seconds
                if refused:
                    results.append(tool_result(call["id"], refused, True))
                    continue
            results.append(self._one_tool(call))
        return results, waited

    def _one_tool(self, call: dict) -> dict:
        try:
            outcome = self.armed.tools.call(call["name"], call.get("input") or {})
            return tool_result(call["id"], outcome.content, outcome.is_error, outcome.images)
        except Exception as exc:  # a tool bug goes back to the model, never crashes the pass
            log.exception("tool %s failed", call.get("name"))
            return tool_result(call["id"], f"tool failed: {type(exc).__name__}: {exc}", True)

    def _capture(self, step: Step) -> None:
        """A web step: where the browser is now (the continue checkpoint) and a thumbnail."""
        capture = getattr(self.armed.tools, "capture", None)
        shot = capture() if capture else None
        if shot is None:
            return
        step.page_url, step.page_title = shot.url[:2000], shot.title[:300]
        if shot.jpeg:
            relative = f"{self.run.pk}/{step.run_pass.number}-{step.number}.jpg"
            path = Path(settings.RYSH_SCREENSHOTS_DIR) / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(shot.jpeg)
            step.screenshot = relative

    def _settle(self, run_pass: Pass, step: Step, reply: ModelReply, user_turn: list[dict], seconds: float) -> None:
        """The step's checkpoint, in one transaction: the turns it appended (and only those),
        the pass's counters, its event, then its tokens (the ledger reads the control back)."""
        usage = reply.usage
        self.conversation.append("assistant", reply.content)
        results = [block for block in user_turn if block.get("type") == "tool_result"]
        if user_turn:
            self.conversation.append("user", user_turn)
            self.conversation.drop_old_images()
        run_pass.leg_steps += 1
        run_pass.leg_tokens += usage.counted
        run_pass.leg_seconds += seconds
        run_pass.tokens_counted += usage.counted
        _apply_reply(step, reply, seconds)
        step.tool_calls, step.tool_results = reply.tool_calls, [without_images(r) for r in results]
        with transaction.atomic():
            self.conversation.save()
            run_pass.save(update_fields=CHECKPOINT_FIELDS)
            events.record(
                self.run,
                "step",
                _step_summary(step, usage.counted),
                pass_number=run_pass.number,
                step=step.number,
                leg=step.leg,
                counted=usage.counted,
            )
            self.ledger.settle(step, usage, clock_seconds=seconds)
        self.controls.read_back()

    # -- the judge ------------------------------------------------------------------------

    def _judge(self, run_pass: Pass) -> str | None:
        Run.objects.filter(pk=self.run.pk).update(phase=Phase.JUDGING)
        self.run.phase = Phase.JUDGING
        events.record(self.run, "judging", f"pass {run_pass.number}: judging")
        result = self.passes.result_of(run_pass)
        spec = self.armed.spec
        # placeholders are filled in until: as in the prompts (SPEC §1): the judge of a run on
        # "cats" reads "five entries on cats", never "{{topic}}"
        until = render(
            spec.loop_while.until or "", spec=spec, args=self.run.args, output_dir=str(self.armed.output_dir)
        )
        message = judging.judge_message(until, result, self._evidence(run_pass))
        messages = [{"role": "user", "content": [{"type": "text", "text": message}]}]
        bound = input_bound(system=judging.JUDGE_SYSTEM, tools=[], messages=messages, last=None)
        left = (
            (self.plan.outer_tokens - self.run.tokens_counted) if self.plan.outer_tokens else bound + JUDGE_MAX_TOKENS
        )
        max_tokens = clamp_max_tokens(left, bound, ceiling=JUDGE_MAX_TOKENS)
        counted = fitting.worth_counting(max_tokens, JUDGE_MAX_TOKENS)
        if counted:
            bound = self._judge_bound(run_pass, messages, bound)
            max_tokens = clamp_max_tokens(left, bound, ceiling=JUDGE_MAX_TOKENS)
        if max_tokens is None:
            self._finish("budget exhausted")
            return None
        recount = None if counted else partial(self._judge_bound, run_pass, messages, bound)
        while True:
            fitted, applying, bound = self.quota.fit(bound, max_tokens, self.run.judge_model, recount)
            try:
                step = self.ledger.reserve(
                    run_pass,
                    leg=Phase.JUDGING,
                    model=self.run.judge_model,
                    max_tokens=fitted,
                    bound=bound,
                    message_count=0,
                    applying=applying,
                )
                break
            except QuotaRefused as refused:
                self.quota.wait(refused, self.run.judge_model)
        self.quota.reserved()
        max_tokens = fitted
        started = time.monotonic()
        try:
            reply = self.armed.model.complete(self._judge_request(run_pass, messages, max_tokens, seconds=300))
        except ModelCancelled:
            self.ledger.settle_reserved(step, StepStatus.CANCELLED, time.monotonic() - started)
            self._pause("cancelled")
        except ModelError as exc:
            self.ledger.settle_failed(step, str(exc), time.monotonic() - started)
            self._finish(f"judge error: {exc}")
            return None
        verdict = judging.parse_verdict(reply.text)
        self._settle_judge(run_pass, step, reply, verdict, time.monotonic() - started)
        return verdict.label

    def _judge_bound(self, run_pass: Pass, messages: list, bound: int) -> int:
        """The judge's input counted exactly where that beats its byte bound: a 20 KB result
        bounds at 20,000 tokens by its bytes; it counts about 5,000."""
        counted = self._count(self._judge_request(run_pass, messages, JUDGE_MAX_TOKENS, seconds=60))
        return min(bound, counted) if counted is not None else bound

    def _judge_request(self, run_pass: Pass, messages: list, max_tokens: int, *, seconds: float) -> ModelRequest:
        return ModelRequest(
            model=self.run.judge_model,
            system=judging.JUDGE_SYSTEM,
            messages=messages,
            tools=[],
            max_tokens=max_tokens,
            deadline=time.monotonic() + seconds,
            purpose=Phase.JUDGING,
            pass_number=run_pass.number,
            cancelled=self.controls.cancel_requested,
        )

    def _settle_judge(self, run_pass: Pass, step: Step, reply: ModelReply, verdict, seconds: float) -> None:
        _apply_reply(step, reply, seconds)
        run_pass.verdict, run_pass.reason = verdict.label, verdict.reason
        run_pass.tokens_counted += reply.usage.counted
        with transaction.atomic():
            run_pass.save()
            Run.objects.filter(pk=self.run.pk).update(last_verdict=verdict.label)
            # the judge's clock is not the pass's: its seconds stay off the loop's clock
            self.ledger.settle(step, reply.usage, clock_seconds=0)
        self.run.last_verdict = verdict.label
        events.record(
            self.run,
            "verdict",
            f"pass {run_pass.number}: {verdict.label} — {verdict.reason}",
            number=run_pass.number,
            verdict=verdict.label,
        )

    # -- controls -------------------------------------------------------------------------

    def _pause(self, reason: str, detail: str = "", **data) -> None:
        pause_run(self.run, reason, detail, **data)
        raise Paused(reason)

    def _finish(self, cause: str) -> None:
        finish_run(self.run, cause)


def pause_run(run: Run, reason: str, detail: str = "", **data) -> None:
    Run.objects.filter(pk=run.pk).update(state=RunState.PAUSED, pause_reason=reason, control=keep_stop())
    run.refresh_from_db()
    events.record(run, "paused", f"paused({reason})" + (f": {detail}" if detail else ""), reason=reason, **data)
    _write_report_or_say(run)
    run_paused.send(sender=Run, run=run, reason=reason)  # notifications listen


def finish_run(run: Run, cause: str) -> None:
    Run.objects.filter(pk=run.pk).update(
        state=RunState.FINISHED, cause=cause, phase="", control="", ended_at=timezone.now()
    )
    run.refresh_from_db()
    events.record(run, "finished", cause, cause=cause)
    _snapshot_or_say(run)
    _write_report_or_say(run)
    run_finished.send(sender=Run, run=run)  # schedules count the outcome; nothing here knows them


def _write_report_or_say(run: Run) -> None:
    """run-report.md beside the results; a folder that refuses it (full, read-only, gone) is
    said in the events and never changes how the run ended: the run page renders the same
    report from the database."""
    try:
        write_report(run)
    except OSError as exc:
        log.warning("run %s: run-report.md not written: %s", run.pk, exc)
        events.record(run, "note", f"run-report.md not written ({exc.strerror or exc}); the run page shows the report")


def _snapshot_or_say(run: Run) -> None:
    """A pass the run ended inside (an error, a stop mid-leg) is kept as it stands."""
    try:
        snapshots.snapshot_unended_pass(run)
    except OSError as exc:
        log.warning("run %s: last pass's snapshot not kept: %s", run.pk, exc)
        events.record(run, "note", f"the last pass's results were not kept as a snapshot ({exc})")


def _apply_reply(step: Step, reply: ModelReply, seconds: float) -> None:
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
