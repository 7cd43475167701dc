"""The pass in hand (docs/running-loops.md): its row and its conversation; how a pass starts (the first,
a resumed run's, or seeded with the previous pass's result and the judge's reason), how the
wrap-up takes the wheel, and how a pass ends (its results kept as a snapshot)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from agents.ports import GateOutcome
from runs import events
from runs.arming import first_message, resumed_message, seeded_message
from runs.conversation import Conversation
from runs.engine import verdicts as judging
from runs.engine.context import Armed
from runs.engine.controls import keep_stop
from runs.models import Pass, Phase, Run, StepStatus
from runs.results import snapshots
from runs.states import EventKind

log = logging.getLogger(__name__)

LOST_CALL = "outcome unknown: the worker was lost while this call ran"


class Passes:
    """The run's passes, one at a time; `conversation` is the current pass's, while it runs."""

    def __init__(self, run: Run, armed: Armed):
        self.run = run
        self.armed = armed
        self.plan = armed.plan
        self.conversation: Conversation | None = None

    def current(self) -> Pass:
        """The run's newest pass (the first one started when there is none), its conversation
        loaded when it has not ended."""
        run_pass = self.run.passes.order_by("-number").first()
        if run_pass is None:  # a fork goes on with the pass after the one it forks from
            return self.start((self.run.fork_pass or 0) + 1, previous=None)
        if run_pass.ended_at is None:  # a continue, a lost worker's re-run: the same conversation
            self.conversation = Conversation.load(run_pass)
            self._tell_calls_lost(run_pass)
        return run_pass

    def _tell_calls_lost(self, run_pass: Pass) -> None:
        """Tool calls a lost worker left in flight may or may not have taken effect: the model,
        asked again from the conversation as it was, hears so once before it repeats them."""
        lost = [s for s in run_pass.steps.filter(status=StepStatus.LOST) if s.tool_calls and not s.tool_results]
        if not lost:
            return
        calls = [call for step in lost for call in step.tool_calls]
        named = "; ".join(f"{c['name']} {json.dumps(c.get('input') or {}, ensure_ascii=False)[:300]}" for c in calls)
        self.conversation.append_user_text(
            f"[note: the worker running this pass was lost while these tool calls ran: {named}. They may or may "
            "not have taken effect: check before you repeat one that changes something.]"
        )
        with transaction.atomic():
            self.conversation.save()
            for step in lost:
                step.tool_results = [
                    {"tool_use_id": c.get("id", ""), "content": LOST_CALL, "is_error": True} for c in step.tool_calls
                ]
                step.save(update_fields=["tool_results"])
        events.record(self.run, EventKind.NOTE, f"{len(calls)} tool call(s) lost with the worker: outcome unknown")

    def start(self, number: int, previous: Pass | None) -> Pass:
        spec, out, workdir = self.armed.spec, str(self.armed.output_dir), self.armed.workdir
        if previous is None and self.run.resumed_from_id:
            text = resumed_message(
                spec,
                self.run.args,
                out,
                previous_run=self.run.resumed_from_id,
                result=judging.newest_result(self._resumed_folder()),
                workdir=workdir,
            )
        elif previous is None and self.run.fork_pass:
            text = self._forked_message(number)
        elif previous is None:
            text = first_message(spec, self.run.args, out, workdir=workdir)
        else:
            text = seeded_message(
                spec,
                self.run.args,
                out,
                number=number,
                result=self.result_of(previous),
                reason=previous.reason,
                workdir=workdir,
            )
        with transaction.atomic():
            run_pass, created = Pass.objects.get_or_create(run=self.run, number=number)
            self.conversation = Conversation.start(run_pass, text) if created else Conversation.load(run_pass)
        Run.objects.filter(pk=self.run.pk).update(pass_number=number, phase=Phase.TASK)
        self.run.pass_number, self.run.phase = number, Phase.TASK
        events.record(self.run, EventKind.PASS_STARTED, f"pass {number}/{self.plan.passes} started", number=number)
        return run_pass

    def _forked_message(self, number: int) -> str:
        """A fork's first pass (docs/forks.md), seeded as the parent's next pass would have been:
        with what the parent's pass saved and its verdict's reason, in the fork's own prompts."""
        forked = Pass.objects.filter(run_id=self.run.forked_from_id, number=self.run.fork_pass).first()
        result = snapshots.judge_input(forked) if forked is not None and forked.snapshot_at else None
        reason = forked.reason if forked is not None else ""
        spec, out = self.armed.spec, str(self.armed.output_dir)
        return seeded_message(
            spec, self.run.args, out, number=number, result=result, reason=reason, workdir=self.armed.workdir
        )

    def _resumed_folder(self) -> Path:
        """Where the resumed run saved: its own results folder (a coding run's is its slot's,
        the same as this run's unless the run was started before slots had folders)."""
        folder = Run.objects.filter(pk=self.run.resumed_from_id).values_list("output_dir", flat=True).first()
        return Path(folder) if folder else self.armed.output_dir

    def begin_wrap_up(self, run_pass: Pass, stop: str) -> None:
        """The task prompt loses the wheel; the takeover prompt gets a fresh allotment."""
        prompt = self.armed.fill(self.armed.spec.do.takeover_prompt or "", self.run.args)
        self.conversation.append_user_text(prompt)
        run_pass.phase = Phase.WRAP_UP
        run_pass.takeover_used = True
        run_pass.leg_start = len(self.conversation) - 1
        run_pass.leg_steps, run_pass.leg_tokens, run_pass.leg_seconds = 0, 0, 0.0
        with transaction.atomic():
            self.conversation.save()
            run_pass.save()
            Run.objects.filter(pk=self.run.pk).update(phase=Phase.WRAP_UP, control=keep_stop())
        self.run.refresh_from_db(fields=["phase", "control"])
        events.record(
            self.run,
            EventKind.WRAP_UP,
            f"pass {run_pass.number}: the task leg stopped ({stop}); the wrap-up prompt takes the wheel",
            stop=str(stop),
        )

    def end(self, run_pass: Pass) -> None:
        run_pass.ended_at = timezone.now()
        run_pass.snapshot_at = None  # a pass re-run after a lost worker is kept as it ends now
        kept = self._snapshot(run_pass)
        self._tools_pass_ended(run_pass)
        if kept:
            run_pass.result_file = max(kept, key=lambda r: (r.modified_at, r.name)).name
        run_pass.save()
        self.conversation = None
        events.record(
            self.run,
            EventKind.PASS_ENDED,
            f"pass {run_pass.number} ended: task "
            f"{run_pass.task_stop}" + (f", wrap-up {run_pass.wrap_up_stop}" if run_pass.takeover_used else ""),
            number=run_pass.number,
        )

    def gate(self, run_pass: Pass) -> bool:
        """The tools port's gate (a coding recipe's until_command) run once the pass's legs
        ended, before the judge, and kept on the pass. False when a cancel or a stop cut it
        short: that says nothing about the pass, so it is not kept and runs again when the
        run goes on."""
        outcome = None if run_pass.gate_command else self._run_gate(run_pass)
        if outcome is None:
            return True
        if outcome.interrupted:
            said = f"pass {run_pass.number}: until_command stopped ({outcome.interrupted}); it runs again if the run goes on"
            events.record(self.run, EventKind.NOTE, said)
            return False
        run_pass.gate_command, run_pass.gate_status = outcome.command, outcome.exit_status
        run_pass.gate_output = outcome.output
        run_pass.save(update_fields=["gate_command", "gate_status", "gate_output"])
        said = run_pass.gate_failure or f"until_command `{outcome.command}` exited 0"
        events.record(
            self.run,
            EventKind.GATE,
            f"pass {run_pass.number}: {said}",
            number=run_pass.number,
            exit_status=outcome.exit_status,
        )
        return True

    def _run_gate(self, run_pass: Pass) -> GateOutcome | None:
        try:
            return self.armed.tools.pass_gate()
        except Exception as exc:  # whatever broke, a pass cannot count as done on a gate that did not run
            log.warning("run %s pass %s: the gate did not run", self.run.pk, run_pass.number, exc_info=True)
            return GateOutcome(self.armed.spec.until_command or "(the gate)", None, f"not run: {exc}")

    def result_of(self, run_pass: Pass) -> tuple[str, str] | None:
        """What the pass saved, as its snapshot kept it (the folder may have moved on since)."""
        return snapshots.judge_input(run_pass) if run_pass.snapshot_at else self._newest_result()

    def _tools_pass_ended(self, run_pass: Pass) -> None:
        """A tools port that keeps state across passes (a working copy) records the pass's end;
        a failure is said, and never changes how the pass ended."""
        try:
            self.armed.tools.pass_ended(run_pass.number)
        except Exception as exc:
            log.warning("run %s pass %s: the tools' pass end failed", self.run.pk, run_pass.number, exc_info=True)
            events.record(
                self.run, EventKind.NOTE, f"pass {run_pass.number}: its working copy was not measured ({exc})"
            )

    def _newest_result(self) -> tuple[str, str] | None:
        return judging.newest_result(self.armed.output_dir, since=self._since())

    def _since(self) -> float | None:
        return self.run.results_since()

    def _snapshot(self, run_pass: Pass) -> list:
        """The pass's results kept as its snapshot; a disk that refuses them is said, and the
        judge then reads the folder as before."""
        try:
            return snapshots.snapshot_pass(run_pass, self.armed.output_dir, since=self._since())
        except OSError as exc:
            log.warning("run %s pass %s: snapshot not kept: %s", self.run.pk, run_pass.number, exc)
            events.record(self.run, EventKind.NOTE, f"pass {run_pass.number}: results not kept as a snapshot ({exc})")
            return []
