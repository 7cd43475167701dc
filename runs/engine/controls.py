"""What people ask of a run while it works (docs/running-loops.md): the controls they write on the Run (stop,
cancel, land now), read between steps and while a model call is in flight, and approvals, a
tool call held until a person answers."""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models import Case, Value, When

from policies.rules import DENY
from runs import approvals, events
from runs.engine.context import Armed
from runs.engine.policing import policy_decision
from runs.models import Control, Pass, Run, RunState, Step
from runs.states import EventKind, Phase, interruption

CONTROL_POLL_SECONDS = 0.5


class Controls:
    """The control on the Run as of now, read once before each step (unless the step that just
    settled read it back) and at most every CONTROL_POLL_SECONDS while a call asks."""

    def __init__(self, run: Run):
        self.run = run
        self._checked = 0.0
        self._fresh = False  # the last settle read the control back: no need to ask

    def read(self, *, force: bool = False) -> str:
        now = time.monotonic()
        if force or now - self._checked >= CONTROL_POLL_SECONDS:
            self._checked = now
            self.run.control = interruption(self.run) or ""
        return self.run.control

    def read_back(self) -> None:
        """The settle's run update just returned the control (ledger): as fresh as a read."""
        self._checked = time.monotonic()
        self._fresh = True

    def leg_started(self) -> None:
        self._fresh = False  # a leg's first step reads the control itself

    def before_step(self) -> str:
        """The control as of now: what the step that just settled read back, else a read."""
        if self._fresh:
            self._fresh = False
            return self.run.control
        return self.read(force=True)

    def cancel_requested(self) -> bool:
        return self.read() == Control.CANCEL


def keep_stop():
    """Clearing a handled cancel or land must not drop a stop someone asked for meanwhile."""
    return Case(When(control=Control.STOP, then=Value(Control.STOP)), default=Value(""))


# the pattern an approval records when the recipe's `loop.do.auto_approve: false` held the call
ASK_EVERY_CALL = "loop.do.auto_approve: false"


class ApprovalGate:
    """The recipe's `approve:` patterns: a call they name waits for a person's answer."""

    def __init__(self, run: Run, armed: Armed, controls: Controls):
        self.run = run
        self.armed = armed
        self.controls = controls

    def hold(self, call: dict, run_pass: Pass, step: Step) -> tuple[str, float] | None:
        """Hold a call the recipe's `approve:` names until a person answers: (why it is not
        done, or "" when it was approved; seconds waited), or None when it needs no approval."""
        patterns, policy = self.armed.spec.approve, self.armed.policy
        every_call = not self.armed.spec.do.auto_approve and step.leg == Phase.TASK
        if not patterns and not every_call and (policy is None or not policy.holds_calls):
            return None
        arguments = call.get("input") or {}
        asked = approvals.equivalents_of(self.armed.tools, call["name"], arguments)
        decision = policy_decision(policy, asked)
        if decision is not None and decision.action == DENY:  # never run, whatever a person would say
            what = f" {decision.subject!r}" if decision.subject else ""
            events.record(
                self.run, EventKind.NOTE, f"policy refused {call['name']}{what}: {decision.pattern} ({decision.rule})"
            )
            return decision.refusal(), 0.0
        matched = approvals.gate_call(patterns, asked) if patterns else None
        if matched is None and decision is not None:  # the policy's own gate (docs/policy.md)
            matched = (f"{decision.pattern} (policy {decision.rule})", decision.subject)
        if matched is None and every_call:  # `loop.do.auto_approve: false`: as if approve: listed every tool
            matched = (ASK_EVERY_CALL, call["name"])
        if matched is None:
            return None
        began = time.monotonic()
        approval = approvals.request(
            self.run,
            pass_number=run_pass.number,
            step_number=step.number,
            call=call,
            pattern=matched[0],
            subject=matched[1],
            timeout_seconds=self.armed.spec.approve_timeout or settings.RYSH_APPROVAL_TIMEOUT,
        )
        approval = approvals.wait(approval, interrupted=self._interrupted)
        self.run.state = RunState.RUNNING
        if approval.state != "approved":
            return approvals.result_text(approval), time.monotonic() - began
        # The page may have changed while the person looked: act only on what they approved.
        now = approvals.equivalents_of(self.armed.tools, call["name"], arguments)
        return approvals.changed_text(approval, asked, now), time.monotonic() - began

    def _interrupted(self) -> str | None:
        control = self.controls.read(force=True)
        if control == Control.CANCEL:
            return "the run was cancelled while it waited; the action was not taken"
        if control == Control.STOP:
            return "the run was asked to stop while it waited; the action was not taken"
        return None
