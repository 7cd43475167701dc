"""The do/while state machine (SPEC §3–§4) behind two ports: a model and a set of tools.

It knows neither Anthropic nor any browser. It writes Run/Pass/Step rows, the ledger and
RunEvents, and reads control requests (stop, cancel, land now) that people write on the
Run between steps and while a model call is in flight.

Crash safety: before each model call a Step is written as *pending* with its reservation
(input bound + max_tokens) and counted against the job at once; after the call it is
settled to the real usage in one transaction with the conversation checkpoint. A worker
that dies mid-call leaves a pending step that the next worker settles at its reservation,
so the ceiling holds and no token is counted twice (one ledger entry per step).
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from runs import approvals, events, judge as judging
from agents.ports import ModelCancelled, ModelError, ModelPort, ModelReply, ModelRequest, ToolsPort
from runs.arming import first_message, reminder, resumed_message, seeded_message
from runs.models import Pass, Run, Step
from runs.models import Control, PassStop, Phase, RunState, StepStatus
from catalogue.recipe import render
from catalogue.spec import RecipeSpec
from runs.report import write_report
from runs.signals import run_finished
from budgets.guard import (
    DEFAULT_MAX_OUTPUT, MIN_USEFUL_OUTPUT, REQUEST_OVERHEAD, JobSpent, LastCall, clamp_max_tokens,
    input_bound, leg_left,
)
from runs.models import LedgerEntry
from budgets.plan import JUDGE_MAX_TOKENS, Plan
from budgets.prices import cost

log = logging.getLogger(__name__)

CONTROL_POLL_SECONDS = 0.5
BUDGET_STOPS = (PassStop.STEPS, PassStop.TIME, PassStop.TOKENS, PassStop.LANDED)
LOOP_WINDOW = 20  # loop detection: the last 20 tool calls of the pass...
LOOP_REPEATS = 3  # ...may hold the same call (name and input) at most 3 times
IMAGES_KEPT = 3  # screenshots kept in the conversation; older ones become a note


class Paused(Exception):
    """The run left the worker paused (cancelled, step cap); its checkpoint is saved."""


@dataclass
class Armed:
    spec: RecipeSpec
    plan: Plan
    output_dir: Path
    model: ModelPort
    tools: ToolsPort
    system: str


class Engine:
    def __init__(self, run: Run, armed: Armed):
        self.run = run
        self.armed = armed
        self.plan = armed.plan
        self._control_checked = 0.0

    # -- the loop -------------------------------------------------------------------------

    def go(self) -> None:
        try:
            while self._one_pass():
                pass
        except Paused:
            return
        except Exception as exc:  # the run must land with a cause, whatever broke
            log.exception("run %s failed", self.run.pk)
            self._finish(f"error: {type(exc).__name__}: {exc}")

    def _one_pass(self) -> bool:
        """Advance the current pass to its end; True when another pass should start."""
        run_pass = self._current_pass()
        if run_pass.ended_at is None:
            self._legs(run_pass)
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
        if self._read_control(force=True) == Control.STOP:
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
        self._start_pass(run_pass.number + 1, previous=run_pass)
        return True

    # -- passes ---------------------------------------------------------------------------

    def _current_pass(self) -> Pass:
        run_pass = self.run.passes.order_by("-number").first()
        return run_pass or self._start_pass(1, previous=None)

    def _start_pass(self, number: int, previous: Pass | None) -> Pass:
        spec, out = self.armed.spec, str(self.armed.output_dir)
        if previous is None and self.run.resumed_from_id:
            text = resumed_message(spec, self.run.args, out, previous_run=self.run.resumed_from_id,
                                   result=judging.newest_result(self.armed.output_dir))
        elif previous is None:
            text = first_message(spec, self.run.args, out)
        else:
            text = seeded_message(spec, self.run.args, out, number=number,
                                  result=self._newest_result(), reason=previous.reason)
        run_pass, _ = Pass.objects.get_or_create(
            run=self.run, number=number,
            defaults={"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]})
        Run.objects.filter(pk=self.run.pk).update(pass_number=number, phase=Phase.TASK)
        self.run.pass_number, self.run.phase = number, Phase.TASK
        events.record(self.run, "pass.started", f"pass {number}/{self.plan.passes} started",
                      number=number)
        return run_pass

    def _legs(self, run_pass: Pass) -> None:
        if run_pass.phase == Phase.TASK:
            stop = self._leg(run_pass, Phase.TASK)
            run_pass.task_stop = stop
            if stop in BUDGET_STOPS and self.plan.split.takeover and not run_pass.takeover_used:
                self._begin_wrap_up(run_pass, stop)
            else:
                self._end_pass(run_pass)
                return
        if run_pass.phase == Phase.WRAP_UP:
            run_pass.wrap_up_stop = self._leg(run_pass, Phase.WRAP_UP)
            self._end_pass(run_pass)

    def _begin_wrap_up(self, run_pass: Pass, stop: str) -> None:
        """The task prompt loses the wheel; the takeover prompt gets a fresh allotment."""
        spec = self.armed.spec
        prompt = render(spec.do.takeover_prompt or "", spec=spec, args=self.run.args,
                        output_dir=str(self.armed.output_dir))
        _append_user_text(run_pass.messages, prompt)
        run_pass.phase = Phase.WRAP_UP
        run_pass.takeover_used = True
        run_pass.leg_start = len(run_pass.messages) - 1
        run_pass.leg_steps, run_pass.leg_tokens, run_pass.leg_seconds = 0, 0, 0.0
        with transaction.atomic():
            run_pass.save()
            Run.objects.filter(pk=self.run.pk).update(phase=Phase.WRAP_UP, control=_keep_stop())
        self.run.refresh_from_db(fields=["phase", "control"])
        events.record(self.run, "wrap-up", f"pass {run_pass.number}: the task leg stopped "
                      f"({stop}); the wrap-up prompt takes the wheel", stop=str(stop))

    def _end_pass(self, run_pass: Pass) -> None:
        run_pass.ended_at = timezone.now()
        run_pass.save()
        results = self._newest_result()
        if results:
            Pass.objects.filter(pk=run_pass.pk).update(result_file=results[0])
            run_pass.result_file = results[0]
        events.record(self.run, "pass.ended", f"pass {run_pass.number} ended: task "
                      f"{run_pass.task_stop}" + (f", wrap-up {run_pass.wrap_up_stop}"
                                                 if run_pass.takeover_used else ""),
                      number=run_pass.number)

    def _newest_result(self) -> tuple[str, str] | None:
        since = self.run.started_at.timestamp() - 1 if self.run.started_at else None
        return judging.newest_result(self.armed.output_dir, since=since)

    # -- a leg: steps until the model is done or a ceiling is hit --------------------------

    def _leg(self, run_pass: Pass, leg: str) -> str:
        while True:
            control = self._read_control(force=True)
            if control == Control.CANCEL:
                self._pause("cancelled")
            if control == Control.LAND and leg == Phase.TASK:
                return PassStop.LANDED
            left = leg_left(self.plan, leg, self._spent(), leg_steps=run_pass.leg_steps,
                            leg_tokens=run_pass.leg_tokens, leg_seconds=run_pass.leg_seconds)
            if left.steps <= 0:
                return PassStop.STEPS
            if left.seconds <= 0:
                return PassStop.TIME
            tools = self.armed.tools.specs()
            bound = input_bound(system=self.armed.system, tools=tools,
                                messages=run_pass.messages, last=self._last_call(run_pass))
            max_tokens = clamp_max_tokens(left.tokens, bound)
            if max_tokens is None:
                return PassStop.TOKENS
            reply = self._call(run_pass, leg, tools, max_tokens, bound, left.seconds)
            if not reply.tool_calls:
                # cut short by a max_tokens the budget clamped: that is a budget stop
                if reply.stop_reason == "max_tokens" and max_tokens < DEFAULT_MAX_OUTPUT:
                    return PassStop.TOKENS
                return PassStop.DONE
            self._after_tool_step(run_pass)

    def _after_tool_step(self, run_pass: Pass) -> None:
        interval = self.plan.interval
        if run_pass.leg_steps % interval == 0 and not self.plan.auto_continue:
            self._pause("step cap")

    def _call(self, run_pass: Pass, leg: str, tools: list, max_tokens: int, bound: int,
              seconds_left: float) -> ModelReply:
        step = self._reserve(run_pass, leg, max_tokens, bound)
        started = time.monotonic()
        request = ModelRequest(
            model=self.run.executor_model, system=self.armed.system,
            messages=run_pass.messages, tools=tools, max_tokens=max_tokens,
            deadline=started + seconds_left, purpose=leg, pass_number=run_pass.number,
            leg_start=run_pass.leg_start, cancelled=self._cancel_requested)
        try:
            reply = self.armed.model.complete(request)
        except ModelCancelled:
            self._settle_reserved(step, StepStatus.CANCELLED, time.monotonic() - started)
            self._pause("cancelled")
        except ModelError as exc:
            self._settle_failed(step, str(exc), time.monotonic() - started)
            raise
        results, waited = self._run_tools(reply, run_pass, step)
        self._capture(step)
        # time spent waiting for a person is not the pass's: it stays off every clock
        self._settle(run_pass, step, reply, results, time.monotonic() - started - waited)
        return reply

    def _run_tools(self, reply: ModelReply, run_pass: Pass, step: Step) -> tuple[list[dict], float]:
        """Run the reply's tool calls; returns the results and the seconds spent waiting for
        people to answer approvals."""
        results, waited = [], 0.0
        history = _tool_history(run_pass.messages)
        for call in reply.tool_calls:
            if self._read_control(force=True) == Control.CANCEL:
                results.append(_tool_result(call["id"], "not run: the run was cancelled", True))
                continue
            identity = _call_identity(call)
            repeats = history[-LOOP_WINDOW:].count(identity)
            history.append(identity)
            if repeats >= LOOP_REPEATS:
                results.append(_tool_result(call["id"], (
                    f"refused: this exact call ({call['name']} with the same input) is already "
                    f"{repeats} of your last {LOOP_WINDOW} tool calls. You are going in circles: "
                    "change your approach, or save what you have and finish."), True))
                continue
            held = self._approval(call, run_pass, step)
            if held is not None:
                approval, seconds = held
                waited += seconds
                if approval.state != "approved":
                    results.append(_tool_result(call["id"], approvals.result_text(approval), True))
                    continue
            results.append(self._one_tool(call))
        return results, waited

    def _one_tool(self, call: dict) -> dict:
        try:
            outcome = self.armed.tools.call(call["name"], call.get("input") or {})
            return _tool_result(call["id"], outcome.content, outcome.is_error, outcome.images)
        except Exception as exc:  # a tool bug goes back to the model, never crashes the pass
            log.exception("tool %s failed", call.get("name"))
            return _tool_result(call["id"], f"tool failed: {type(exc).__name__}: {exc}", True)

    def _approval(self, call: dict, run_pass: Pass, step: Step):
        """Hold a call the recipe's `approve:` names until a person answers: (approval, seconds
        waited), or None when the call needs no approval."""
        patterns = self.armed.spec.approve
        if not patterns:
            return None
        arguments = call.get("input") or {}
        describe = getattr(self.armed.tools, "approval_subjects", None)
        subjects = describe(call["name"], arguments) if describe else \
            [v for v in arguments.values() if isinstance(v, str)]
        matched = approvals.gate(patterns, call["name"], subjects)
        if matched is None:
            return None
        began = time.monotonic()
        approval = approvals.request(self.run, pass_number=run_pass.number, step_number=step.number,
                                     call=call, pattern=matched[0], subject=matched[1],
                                     timeout_seconds=settings.RYSH_APPROVAL_TIMEOUT)
        approval = approvals.wait(approval, interrupted=self._approval_interrupted)
        self.run.state = RunState.RUNNING
        return approval, time.monotonic() - began

    def _approval_interrupted(self) -> str | None:
        control = self._read_control(force=True)
        if control == Control.CANCEL:
            return "the run was cancelled while it waited; the action was not taken"
        if control == Control.STOP:
            return "the run was asked to stop while it waited; the action was not taken"
        return None

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

    # -- the ledger: reserve before, settle after ------------------------------------------

    def _reserve(self, run_pass: Pass, leg: str, max_tokens: int, bound: int) -> Step:
        reserved = bound + max_tokens
        with transaction.atomic():
            model = self.run.judge_model if leg == Phase.JUDGING else self.run.executor_model
            step = Step.objects.create(
                run_pass=run_pass, number=run_pass.steps_total + 1, leg=leg, model=model,
                max_tokens=max_tokens, reserved_tokens=reserved,
                message_count=len(run_pass.messages) if leg != Phase.JUDGING else 0)
            # Counted at once: a second call cannot spend what this one may still spend.
            Run.objects.filter(pk=self.run.pk).update(tokens_counted=F("tokens_counted") + reserved)
            run_pass.steps_total += 1
            Pass.objects.filter(pk=run_pass.pk).update(steps_total=run_pass.steps_total)
        self.run.tokens_counted += reserved
        return step

    def _settle(self, run_pass: Pass, step: Step, reply: ModelReply, results: list[dict],
                seconds: float) -> None:
        usage = reply.usage
        run_pass.messages.append({"role": "assistant", "content": reply.content})
        if results:
            content = list(results)
            if (run_pass.leg_steps + 1) % self.plan.interval == 0:
                content.append({"type": "text", "text": reminder(str(self.armed.output_dir))})
            run_pass.messages.append({"role": "user", "content": content})
            _drop_old_images(run_pass.messages, keep=IMAGES_KEPT)
        run_pass.leg_steps += 1
        run_pass.leg_tokens += usage.counted
        run_pass.leg_seconds += seconds
        run_pass.tokens_counted += usage.counted
        _apply_reply(step, reply, seconds)
        step.tool_calls, step.tool_results = reply.tool_calls, [_without_images(r) for r in results]
        with transaction.atomic():
            self._commit_usage(step, run_pass, usage, clock_seconds=seconds)
        events.record(self.run, "step", _step_summary(step), pass_number=run_pass.number,
                      step=step.number, leg=step.leg, counted=usage.counted)

    def _commit_usage(self, step: Step, run_pass: Pass, usage, *, clock_seconds: float) -> None:
        """Inside the caller's transaction: the step, the pass (the checkpoint), its ledger entry
        and the run's totals, corrected from the reservation already counted."""
        step.save()
        run_pass.save()
        self._ledger(step, run_pass.number, usage.input_tokens, usage.output_tokens,
                     usage.cache_read_tokens, usage.cache_write_tokens, estimated=False)
        self._add_to_run(counted=usage.counted - step.reserved_tokens, seconds=clock_seconds,
                         inp=usage.input_tokens, out=usage.output_tokens,
                         read=usage.cache_read_tokens, write=usage.cache_write_tokens,
                         model=step.model)

    def _settle_reserved(self, step: Step, status: str, seconds: float) -> None:
        """Interrupted: what the call cost is unknown, so its full reservation stays counted."""
        step.status, step.counted_tokens = status, step.reserved_tokens
        step.duration_ms = int(seconds * 1000)
        with transaction.atomic():
            step.save()
            self._ledger(step, step.run_pass.number, 0, 0, 0, 0, estimated=True)
            self._add_to_run(counted=0, seconds=seconds, inp=0, out=0, read=0, write=0,
                             model=step.model)

    def _settle_failed(self, step: Step, message: str, seconds: float) -> None:
        """The API refused or never answered: failed requests are not billed."""
        step.status, step.counted_tokens, step.stop_reason = StepStatus.DONE, 0, "error"
        step.text, step.duration_ms = message, int(seconds * 1000)
        with transaction.atomic():
            step.save()
            self._add_to_run(counted=-step.reserved_tokens, seconds=seconds, inp=0, out=0,
                             read=0, write=0, model=step.model)

    def _ledger(self, step: Step, pass_number: int, inp: int, out: int, read: int, write: int,
                *, estimated: bool) -> None:
        LedgerEntry.objects.create(
            run=self.run, step=step, pass_number=pass_number, purpose=step.leg, model=step.model,
            input_tokens=inp, output_tokens=out, cache_read_tokens=read, cache_write_tokens=write,
            counted_tokens=step.counted_tokens, estimated=estimated,
            cost=cost(step.model, input=inp, output=out, cache_read=read, cache_write=write))

    def _add_to_run(self, *, counted: int, seconds: float, inp: int, out: int, read: int,
                    write: int, model: str) -> None:
        """`counted` corrects the reservation already added by _reserve."""
        money = cost(model, input=inp, output=out, cache_read=read, cache_write=write)
        # one UPDATE with F() expressions: a concurrent writer (a control) never loses a count
        extra = {"cost": Coalesce(F("cost"), Value(Decimal(0))) + money} if money is not None else {}
        Run.objects.filter(pk=self.run.pk).update(
            tokens_counted=F("tokens_counted") + counted, seconds_used=F("seconds_used") + seconds,
            input_tokens=F("input_tokens") + inp, output_tokens=F("output_tokens") + out,
            cache_read_tokens=F("cache_read_tokens") + read,
            cache_write_tokens=F("cache_write_tokens") + write, **extra)
        self.run.refresh_from_db(fields=["tokens_counted", "seconds_used", "input_tokens",
                                         "output_tokens", "cache_read_tokens",
                                         "cache_write_tokens", "cost"])

    def _spent(self) -> JobSpent:
        return JobSpent(tokens=self.run.tokens_counted, seconds=self.run.seconds_used)

    def _last_call(self, run_pass: Pass) -> LastCall | None:
        """The previous settled call of this conversation, for the incremental bound."""
        last = run_pass.steps.filter(status=StepStatus.DONE).exclude(leg=Phase.JUDGING) \
            .exclude(stop_reason="error").order_by("-number").first()
        if last is None:
            return None
        return LastCall(context=last.input_tokens + last.cache_read_tokens + last.cache_write_tokens,
                        message_count=last.message_count)

    # -- the judge ------------------------------------------------------------------------

    def _judge(self, run_pass: Pass) -> str | None:
        Run.objects.filter(pk=self.run.pk).update(phase=Phase.JUDGING)
        self.run.phase = Phase.JUDGING
        events.record(self.run, "judging", f"pass {run_pass.number}: judging")
        result = self._newest_result()
        message = judging.judge_message(self.armed.spec.loop_while.until or "", result)
        messages = [{"role": "user", "content": [{"type": "text", "text": message}]}]
        bound = input_bound(system=judging.JUDGE_SYSTEM, tools=[], messages=messages, last=None)
        left = (self.plan.outer_tokens - self.run.tokens_counted) if self.plan.outer_tokens else bound + JUDGE_MAX_TOKENS
        max_tokens = clamp_max_tokens(left, bound, ceiling=JUDGE_MAX_TOKENS)
        if max_tokens is None:
            self._finish("budget exhausted")
            return None
        step = self._reserve(run_pass, Phase.JUDGING, max_tokens, bound)
        started = time.monotonic()
        try:
            reply = self.armed.model.complete(ModelRequest(
                model=self.run.judge_model, system=judging.JUDGE_SYSTEM, messages=messages,
                tools=[], max_tokens=max_tokens, deadline=started + 300, purpose=Phase.JUDGING,
                pass_number=run_pass.number, cancelled=self._cancel_requested))
        except ModelCancelled:
            self._settle_reserved(step, StepStatus.CANCELLED, time.monotonic() - started)
            self._pause("cancelled")
        except ModelError as exc:
            self._settle_failed(step, str(exc), time.monotonic() - started)
            self._finish(f"judge error: {exc}")
            return None
        verdict = judging.parse_verdict(reply.text)
        self._settle_judge(run_pass, step, reply, verdict, time.monotonic() - started)
        return verdict.label

    def _settle_judge(self, run_pass: Pass, step: Step, reply: ModelReply, verdict, seconds: float) -> None:
        _apply_reply(step, reply, seconds)
        run_pass.verdict, run_pass.reason = verdict.label, verdict.reason
        run_pass.tokens_counted += reply.usage.counted
        with transaction.atomic():
            # the judge's clock is not the pass's: its seconds stay off the loop's clock
            self._commit_usage(step, run_pass, reply.usage, clock_seconds=0)
            Run.objects.filter(pk=self.run.pk).update(last_verdict=verdict.label)
        self.run.last_verdict = verdict.label
        events.record(self.run, "verdict", f"pass {run_pass.number}: {verdict.label} — "
                      f"{verdict.reason}", number=run_pass.number, verdict=verdict.label)

    # -- controls -------------------------------------------------------------------------

    def _read_control(self, *, force: bool = False) -> str:
        now = time.monotonic()
        if force or now - self._control_checked >= CONTROL_POLL_SECONDS:
            self._control_checked = now
            self.run.control = Run.objects.filter(pk=self.run.pk).values_list("control", flat=True).first() or ""
        return self.run.control

    def _cancel_requested(self) -> bool:
        return self._read_control() == Control.CANCEL

    def _pause(self, reason: str) -> None:
        pause_run(self.run, reason)
        raise Paused(reason)

    def _finish(self, cause: str) -> None:
        finish_run(self.run, cause)


def pause_run(run: Run, reason: str) -> None:
    Run.objects.filter(pk=run.pk).update(state=RunState.PAUSED, pause_reason=reason,
                                         control=_keep_stop())
    run.refresh_from_db()
    events.record(run, "paused", f"paused({reason})", reason=reason)
    write_report(run)


def finish_run(run: Run, cause: str) -> None:
    Run.objects.filter(pk=run.pk).update(state=RunState.FINISHED, cause=cause, phase="",
                                         control="", ended_at=timezone.now())
    run.refresh_from_db()
    events.record(run, "finished", cause, cause=cause)
    write_report(run)
    run_finished.send(sender=Run, run=run)  # schedules count the outcome; nothing here knows them


def _keep_stop():
    """Clearing a handled cancel or land must not drop a stop someone asked for meanwhile."""
    return Case(When(control=Control.STOP, then=Value(Control.STOP)), default=Value(""))


def _append_user_text(messages: list, text: str) -> None:
    """Add a user text; the API wants turns to alternate, so join the last user turn."""
    block = {"type": "text", "text": text}
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": "user", "content": [block]})


def _apply_reply(step: Step, reply: ModelReply, seconds: float) -> None:
    """A settled call's real usage onto the step that reserved it."""
    usage = reply.usage
    step.status, step.counted_tokens = StepStatus.DONE, usage.counted
    step.input_tokens, step.output_tokens = usage.input_tokens, usage.output_tokens
    step.cache_read_tokens, step.cache_write_tokens = usage.cache_read_tokens, usage.cache_write_tokens
    step.stop_reason, step.text, step.duration_ms = reply.stop_reason, reply.text, int(seconds * 1000)


def _tool_result(tool_use_id: str, content: str, is_error: bool, images: list | None = None) -> dict:
    if images:
        # the Messages API takes text and image blocks in a tool result
        blocks = [{"type": "text", "text": content}] + [
            {"type": "image", "source": {"type": "base64", "media_type": i["media_type"], "data": i["data"]}}
            for i in images]
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": blocks, "is_error": is_error}
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content,
            "is_error": is_error}


def _without_images(result: dict) -> dict:
    """What a Step row keeps of a tool result: its text, and a note for each image."""
    if not isinstance(result.get("content"), list):
        return result
    parts = []
    for block in result["content"]:
        if block.get("type") == "text":
            parts.append(block["text"])
        elif block.get("type") == "image":
            parts.append(f"[an image was shown to the model: {len(block['source']['data']) * 3 // 4 // 1024} KB]")
    return {**result, "content": "\n".join(parts)}


def _drop_old_images(messages: list, keep: int) -> None:
    """Keep only the newest `keep` screenshots in the conversation. Shrinking earlier turns
    only lowers what a call really sends, so the incremental input bound still holds."""
    seen = 0
    for message in reversed(messages):
        for block in message["content"] if isinstance(message.get("content"), list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if not isinstance(inner, list):
                continue
            for index in range(len(inner) - 1, -1, -1):
                if inner[index].get("type") != "image":
                    continue
                seen += 1
                if seen > keep:
                    inner[index] = {"type": "text", "text": "[an earlier screenshot, dropped to save tokens]"}


def _call_identity(call: dict) -> str:
    return call.get("name", "") + " " + json.dumps(call.get("input") or {}, sort_keys=True, ensure_ascii=False)


def _tool_history(messages: list) -> list[str]:
    """Every tool call of the conversation so far, oldest first (survives a continue)."""
    return [_call_identity(block) for message in messages if message.get("role") == "assistant"
            for block in message.get("content") or [] if block.get("type") == "tool_use"]


def _step_summary(step: Step) -> str:
    calls = ", ".join(c["name"] for c in step.tool_calls)
    return f"step {step.number} ({step.leg}): {step.counted_tokens} tokens" + (f"; {calls}" if calls else "")
