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

This module is the loop itself, read top to bottom: passes (pass -> legs -> judge -> next), a
pass's legs, a leg's steps. Each other concern is a collaborator of its own:

- runs.engine.passes   the pass in hand: start (first, resumed, seeded), wrap-up, end, snapshot
- runs.engine.step     a step: bound, exact count, quota fit, reservation, call, tools, settle
- runs.engine.fit_results  tool results fitted to the room the leg has left
- runs.engine.tools    the tools port called: loop detection, approval holds, a web capture
- runs.engine.quota    the team's spend quotas: a call's room, and the wait when there is none
- runs.engine.judge    the judge's call and its verdict
- runs.engine.controls stop / cancel / land now read from the Run, and approval gates
- runs.engine.context    what they share: Armed, StepContext (the step in hand), Paused
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError

from budgets.guard import DEFAULT_MAX_OUTPUT, MIN_USEFUL_OUTPUT, REQUEST_OVERHEAD, leg_left
from runs.conversation import Conversation
from runs.engine.context import Armed, Paused, StepContext
from runs.engine.controls import ApprovalGate, Controls
from runs.engine.fit_results import ResultFitter
from runs.engine.judge import Judge
from runs.engine.outcome import finish_run, pause_run
from runs.engine.passes import Passes
from runs.engine.quota import Quota
from runs.engine.step import Call
from runs.engine.tools import ToolRunner
from runs.ledger import Ledger
from runs.models import Control, Pass, PassStop, Phase, Run
from rysh_site import tracing
from spend.quotas import QuotaRefused

log = logging.getLogger(__name__)

BUDGET_STOPS = (PassStop.STEPS, PassStop.TIME, PassStop.TOKENS, PassStop.LANDED)


class Engine:
    """One run driven to its end (or its pause): passes until the judge says YES or a cap,
    a stop or the budget ends the loop."""

    def __init__(self, run: Run, armed: Armed):
        self.run = run
        self.armed = armed
        self.plan = armed.plan
        self.ledger = Ledger(run)
        self.controls = Controls(run)
        self.passes = Passes(run, armed)
        # the collaborators pause and finish the run through the engine's own _pause and
        # _finish: one way out of the worker, wherever in the loop it is taken
        self.quota = Quota(run, pause=self._pause)
        self.call = Call(
            run,
            armed,
            self.ledger,
            controls=self.controls,
            quota=self.quota,
            fitter=ResultFitter(armed, self.ledger),
            tools=ToolRunner(run, armed, self.controls, ApprovalGate(run, armed, self.controls)),
            pause=self._pause,
        )
        self.judge = Judge(
            run,
            armed,
            self.ledger,
            controls=self.controls,
            quota=self.quota,
            result_of=self.passes.result_of,
            finish=self._finish,
            pause=self._pause,
        )

    @property
    def conversation(self) -> Conversation | None:
        """The current pass's conversation, while it runs."""
        return self.passes.conversation

    # -- the while loop: passes ---------------------------------------------------------

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
        tracing.pass_started(self.run, run_pass)
        if run_pass.ended_at is None:
            self._legs(run_pass)
        if PassStop.REFUSED in (run_pass.task_stop, run_pass.wrap_up_stop):
            self._finish(f"error: the model refused to go on (stop reason: refusal) in pass {run_pass.number}")
            return False
        if self._stop_requested():
            return False
        if not self.passes.gate(run_pass):  # a cancel or a stop cut the until_command short
            if not self._stop_requested():
                self._pause("cancelled")
            return False
        if not self.plan.loop_enabled:
            failure = run_pass.gate_failure  # one pass, no judge: the gate alone says done
            self._finish(f"unfulfilled: {failure}" if failure else "done")
            return False
        if not run_pass.verdict:
            verdict = self.judge.verdict(run_pass)
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

    # -- the do leg: a pass's legs ------------------------------------------------------

    def _legs(self, run_pass: Pass) -> None:
        """The task leg; on a budget stop, the wrap-up leg once (when the recipe has one)."""
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

    # -- a leg: steps until the model is done or a ceiling is hit --------------------------

    def _leg(self, run_pass: Pass, leg: str) -> str:
        """The leg's steps, each taken by self.call; returns why the leg stopped (a PassStop)."""
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
            ctx = StepContext(run_pass, leg, self.passes.conversation, self.armed.tools.specs(), left.seconds)
            try:
                made = self.call.make(ctx, left.tokens)
            except QuotaRefused as refused:
                self.quota.wait(refused, self.run.executor_model)
                continue
            if made is None:
                return PassStop.TOKENS  # too little left for a useful answer: a budget stop
            reply, max_tokens = made
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

    def _after_tool_step(self, run_pass: Pass) -> None:
        """Every `interval` steps without auto_continue the run waits for a person (docs/running-loops.md)."""
        interval = self.plan.interval
        if run_pass.leg_steps % interval == 0 and not self.plan.auto_continue:
            self._pause("step cap")

    # -- how a run leaves the worker ------------------------------------------------------

    def _pause(self, reason: str, detail: str = "", **data) -> None:
        pause_run(self.run, reason, detail, **data)
        raise Paused(reason)

    def _finish(self, cause: str) -> None:
        finish_run(self.run, cause)
