"""The do/while state machine (docs/running-loops.md) behind two ports: a model and a set of tools.

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

The loop is a walk over small stages, each of whose `run(ctx)` returns the next one:

    StartPass -> TaskLeg -> [WrapUpLeg] -> PassEnd -> JudgePass -> NextPass -> StartPass … | End

over one LoopContext (runs.engine.context). Wherever a run stops (a cancel, a step cap, a quota,
a stop, an error) Interrupted carries its outcome to Engine.go, which writes it once
(runs.engine.outcome). A continue or a recovered worker starts again at StartPass, which picks
the stage from the phase the pass saved.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import NoReturn, Protocol

from django.db import InterfaceError, OperationalError

from budgets.guard import DEFAULT_MAX_OUTPUT, MIN_USEFUL_OUTPUT, REQUEST_OVERHEAD, leg_left
from runs.conversation import Conversation
from runs.engine.context import Armed, LoopContext, StepContext
from runs.engine.controls import ApprovalGate, Controls
from runs.engine.delegation import SubAgents
from runs.engine.judge import Judge
from runs.engine.outcome import Finish, Interrupted, Outcome, Pause, outcome_write
from runs.engine.passes import Passes
from runs.engine.quota import Quota
from runs.engine.result_room import ResultFitter
from runs.engine.seats import leg_model
from runs.engine.step import Call
from runs.engine.tools import ToolRunner
from runs.ledger import Ledger
from runs.models import Control, Pass, PassStop, Phase, Run
from runs.states import PauseReason
from rysh_site import tracing
from spend.quotas import QuotaRefused

log = logging.getLogger(__name__)

BUDGET_STOPS = (PassStop.STEPS, PassStop.TIME, PassStop.TOKENS, PassStop.LANDED)


class Engine:
    """One run driven to its end (or its pause): passes until the judge says YES or a cap,
    a stop or the budget ends the loop."""

    def __init__(self, run: Run, armed: Armed):
        self.run = run
        self.ctx = loop_context(run, armed, pause=self._pause, finish=self._finish)

    @property
    def conversation(self) -> Conversation | None:
        """The current pass's conversation, while it runs."""
        return self.ctx.passes.conversation

    def go(self) -> None:
        stage: Stage | End = StartPass()
        try:
            while not isinstance(stage, End):
                stage = stage.run(self.ctx)
            outcome = stage.outcome
        except Interrupted as interrupted:
            outcome = interrupted.outcome
        except (InterfaceError, OperationalError):
            # The database went away under the engine (a dropped connection, a restart): nothing
            # can be written now, and nothing is wrong with the run. Leave it `running` with its
            # checkpoint; its heartbeat stops with this worker's task, and the sweeper continues
            # it once the database answers (worker lost -> continued).
            log.exception("run %s: the database failed; the sweeper continues it", self.run.pk)
            raise
        except Exception as exc:  # the run must land with a cause, whatever broke
            log.exception("run %s failed", self.run.pk)
            outcome = Finish(f"error: {type(exc).__name__}: {exc}")
        outcome_write(self.run, outcome)

    # how a collaborator stops the run wherever it is: the outcome goes up to go()

    def _pause(self, reason: str, detail: str = "", **data) -> NoReturn:
        raise Interrupted(Pause(reason, detail, data))

    def _finish(self, cause: str) -> NoReturn:
        raise Interrupted(Finish(cause))


def loop_context(run: Run, armed: Armed, *, pause, finish) -> LoopContext:
    """The run's collaborators, wired once: each pauses and finishes the run through `pause`
    and `finish` (one way out of the worker, wherever in the loop it is taken)."""
    ledger, controls, passes = Ledger(run), Controls(run), Passes(run, armed)
    quota = Quota(run, pause=pause)
    call = Call(
        run,
        armed,
        ledger,
        controls=controls,
        quota=quota,
        fitter=ResultFitter(armed, ledger),
        tools=ToolRunner(run, armed, controls, ApprovalGate(run, armed, controls)),
        pause=pause,
    )
    call.delegation = SubAgents(run, armed, ledger, controls).attach(armed.tools)
    judge = Judge(
        run,
        armed,
        ledger,
        controls=controls,
        quota=quota,
        result_of=passes.result_of,
        finish=finish,
        pause=pause,
    )
    return LoopContext(run, armed, ledger, controls, passes, quota, call, judge, pause=pause, finish=finish)


# -- the stages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class End:
    outcome: Outcome


class Stage(Protocol):
    def run(self, ctx: LoopContext) -> Stage | End: ...


@dataclass(frozen=True)
class StartPass:
    """The pass in hand (the first, a resumed one, or the next): its stage from its saved phase."""

    def run(self, ctx: LoopContext) -> Stage | End:
        run_pass = ctx.passes.current()
        tracing.pass_started(ctx.run, run_pass)
        if run_pass.ended_at is None and run_pass.phase == Phase.TASK:
            return TaskLeg(run_pass)
        if run_pass.ended_at is None and run_pass.phase == Phase.WRAP_UP:
            return WrapUpLeg(run_pass)
        return PassEnd(run_pass)


@dataclass(frozen=True)
class TaskLeg:
    """The task leg; on a budget stop, the wrap-up leg once (when the recipe has one)."""

    run_pass: Pass

    def run(self, ctx: LoopContext) -> Stage | End:
        run_pass = self.run_pass
        stop = leg_run(ctx, run_pass, Phase.TASK)
        run_pass.task_stop = stop
        if stop in BUDGET_STOPS and ctx.plan.split.takeover and not run_pass.takeover_used:
            ctx.passes.begin_wrap_up(run_pass, stop)
            return WrapUpLeg(run_pass)
        ctx.passes.end(run_pass)
        return PassEnd(run_pass)


@dataclass(frozen=True)
class WrapUpLeg:
    run_pass: Pass

    def run(self, ctx: LoopContext) -> Stage | End:
        self.run_pass.wrap_up_stop = leg_run(ctx, self.run_pass, Phase.WRAP_UP)
        ctx.passes.end(self.run_pass)
        return PassEnd(self.run_pass)


@dataclass(frozen=True)
class PassEnd:
    """The pass ended: a refusal, a stop, its gate, or a loop of one pass end the run here."""

    run_pass: Pass

    def run(self, ctx: LoopContext) -> Stage | End:
        run_pass = self.run_pass
        if PassStop.REFUSED in (run_pass.task_stop, run_pass.wrap_up_stop):
            return End(Finish(f"error: the model refused to go on (stop reason: refusal) in pass {run_pass.number}"))
        stop_check(ctx)
        if not ctx.passes.gate(run_pass):  # a cancel or a stop cut the until_command short
            stop_check(ctx)
            return End(Pause(PauseReason.CANCELLED))
        if not ctx.plan.loop_enabled:
            failure = run_pass.gate_failure  # one pass, no judge: the gate alone says done
            return End(Finish(f"unfulfilled: {failure}" if failure else "done"))
        return JudgePass(run_pass)


@dataclass(frozen=True)
class JudgePass:
    run_pass: Pass

    def run(self, ctx: LoopContext) -> Stage | End:
        if not self.run_pass.verdict:
            ctx.judge.verdict(self.run_pass)
        if self.run_pass.verdict == "YES":
            return End(Finish("fulfilled"))
        return NextPass(self.run_pass)


@dataclass(frozen=True)
class NextPass:
    """Another pass, unless a stop, the pass cap, the loop's clock or its tokens end the run."""

    run_pass: Pass

    def run(self, ctx: LoopContext) -> Stage | End:
        plan, run = ctx.plan, ctx.run
        stop_check(ctx)
        if self.run_pass.number >= plan.passes:
            return End(Finish(f"unfulfilled: the {plan.passes}-pass cap is reached"))
        if plan.outer_seconds and run.seconds_used >= plan.outer_seconds:
            return End(Finish("the loop's time cap elapsed"))
        left = plan.outer_tokens - run.tokens_counted
        if plan.outer_tokens and left < REQUEST_OVERHEAD + MIN_USEFUL_OUTPUT:
            return End(Finish("budget exhausted"))
        ctx.passes.start(self.run_pass.number + 1, previous=self.run_pass)
        return StartPass()


def stop_check(ctx: LoopContext) -> None:
    """A stop asked for at any time before the next pass: the run ends without iterating."""
    if ctx.controls.read(force=True) == Control.STOP:
        ctx.finish("stopped by user")


# -- a leg: steps until the model is done or a ceiling is hit -----------------------------------


def leg_run(ctx: LoopContext, run_pass: Pass, leg: str) -> str:
    """The leg's steps, each taken by ctx.call; returns why the leg stopped (a PassStop)."""
    ctx.controls.leg_started()
    while True:
        control = ctx.controls.before_step()
        if control == Control.CANCEL:
            ctx.pause(PauseReason.CANCELLED)
        if control == Control.LAND and leg == Phase.TASK:
            return PassStop.LANDED
        left = leg_left(
            ctx.plan,
            leg,
            ctx.ledger.spent(),
            leg_steps=run_pass.leg_steps,
            leg_tokens=run_pass.leg_tokens,
            leg_seconds=run_pass.leg_seconds,
        )
        if left.steps <= 0:
            return PassStop.STEPS
        if left.seconds <= 0:
            return PassStop.TIME
        step = StepContext(run_pass, leg, ctx.passes.conversation, ctx.armed.tools.specs(), left.seconds)
        try:
            made = ctx.call.make(step, left.tokens)
        except QuotaRefused as refused:
            ctx.quota.wait(refused, leg_model(ctx.run, ctx.armed.spec, leg))  # the model the leg calls
            continue
        if made is None:
            return PassStop.TOKENS  # too little left for a useful answer: a budget stop
        stop = _leg_stop(ctx, *made)
        if stop == "":
            _after_tool_step(ctx, run_pass)
        elif stop is not None:
            return stop


def _leg_stop(ctx: LoopContext, reply, max_tokens: int) -> str | None:
    """Why the leg stops after this reply (a PassStop); None: the leg goes on; "": it goes on
    after a tool step."""
    if reply.stop_reason == "refusal":
        return PassStop.REFUSED  # the pass ends and the run says why (PassEnd)
    if reply.stop_reason == "model_context_window_exceeded":
        return PassStop.TOKENS  # out of room like out of tokens: the wrap-up may take over
    if reply.stop_reason == "pause_turn":
        return None  # the same turn goes on: its partial content goes back, no user text
    if reply.tool_calls:
        return ""
    if ctx.quota.cut(reply):
        return None  # not a budget stop and not done: the model goes on after the note
    # cut short by a max_tokens the budget clamped: that is a budget stop
    if reply.stop_reason == "max_tokens" and max_tokens < DEFAULT_MAX_OUTPUT:
        return PassStop.TOKENS
    return PassStop.DONE


def _after_tool_step(ctx: LoopContext, run_pass: Pass) -> None:
    """Every `interval` steps without auto_continue the run waits for a person (docs/running-loops.md)."""
    if run_pass.leg_steps % ctx.plan.interval == 0 and not ctx.plan.auto_continue:
        ctx.pause(PauseReason.STEP_CAP)
