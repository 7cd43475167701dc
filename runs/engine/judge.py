"""The judge (docs/running-loops.md): after each pass, a fresh call of the judge model reads what the pass
saved against `until` and answers YES or NO with a reason. Its tokens count against the job,
under the same hard ceiling and quotas as any step (its verdict parsing is runs.engine.verdicts)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from django.db import transaction

from agents.ports import ModelCancelled, ModelError, ModelReply, ModelRequest
from budgets.guard import input_bound
from budgets.plan import JUDGE_MAX_TOKENS
from runs import events
from runs.engine import verdicts as judging
from runs.engine.call import StepReservation, budgeted_call, call_size, counted_bound
from runs.engine.context import Armed
from runs.engine.controls import Controls
from runs.engine.quota import Quota
from runs.engine.seats import judge_effort
from runs.engine.step import apply_reply
from runs.ledger import Ledger
from runs.models import Pass, Phase, Run, Step
from runs.states import EventKind, PauseReason


class Judge:
    """One pass judged: its verdict label (a run that cannot be judged ends or pauses instead:
    `finish` and `pause` raise)."""

    def __init__(
        self,
        run: Run,
        armed: Armed,
        ledger: Ledger,
        *,
        controls: Controls,
        quota: Quota,
        result_of: Callable[[Pass], tuple[str, str] | None],
        finish: Callable[[str], None],
        pause: Callable[..., None],
    ):
        self.run = run
        self.armed = armed
        self.plan = armed.plan
        self.ledger = ledger
        self.controls = controls
        self.quota = quota
        self._result_of = result_of  # what the pass saved, as its snapshot kept it
        self._finish = finish  # the engine's: the run ends with a cause
        self._pause = pause  # the engine's: the run pauses, this worker lets the run go

    def verdict(self, run_pass: Pass) -> str | None:
        Run.objects.filter(pk=self.run.pk).update(phase=Phase.JUDGING)
        self.run.phase = Phase.JUDGING
        events.record(self.run, EventKind.JUDGING, f"pass {run_pass.number}: judging")
        result = self._result_of(run_pass)
        spec = self.armed.spec
        # placeholders are filled in until: as in the prompts (docs/recipes.md): the judge of a run on
        # "cats" reads "five entries on cats", never "{{topic}}"
        until = self.armed.fill(spec.loop_while.until or "", self.run.args)
        message = judging.judge_message(until, result, self._evidence(run_pass))
        messages = [{"role": "user", "content": [{"type": "text", "text": message}]}]
        bound = input_bound(system=judging.JUDGE_SYSTEM, tools=[], messages=messages, last=None)
        left = (
            (self.plan.outer_tokens - self.run.tokens_counted) if self.plan.outer_tokens else bound + JUDGE_MAX_TOKENS
        )
        count = partial(self._bound, run_pass, messages, bound)
        sized = call_size(bound, left=left, ceiling=JUDGE_MAX_TOKENS, count=count)
        if sized.max_tokens is None:
            self._finish("budget exhausted")
        reservation = StepReservation(
            self.ledger,
            self.quota,
            run_pass,
            leg=Phase.JUDGING,
            model=self.run.judge_model,
            message_count=0,
            wait_refused=True,
        )
        try:
            called = budgeted_call(
                model=self.armed.model,
                request=partial(self._request, run_pass, messages, seconds=300),
                label="judge",
                sized=sized,
                count=count,
                reservation=reservation,
            )
        except ModelCancelled:
            self._pause(PauseReason.CANCELLED)
        except ModelError as exc:
            self._finish(f"judge error: {exc}")
        reply, step = called.reply, called.held.hold
        started = called.started
        verdict = judging.gated(judging.parse_verdict(reply.text), run_pass.gate_failure)
        self._settle(run_pass, step, reply, verdict, time.monotonic() - started, reservation, called.held)
        return verdict.label

    def _evidence(self, run_pass: Pass) -> list[tuple[str, str]]:
        """What the judge reads beside the result when the tools port has more to show (a
        coding pass: its final answer, the diff stat of its working copy, its gate's result)."""
        evidence = self.armed.tools.judge_evidence(run_pass.number)
        gate = [("until_command", judging.gate_evidence(run_pass.gate_command, run_pass.gate_output))]
        gate = gate if run_pass.gate_command else []
        if evidence is None:
            return gate
        answer = (
            Step.objects.filter(run_pass=run_pass)
            .exclude(leg=Phase.JUDGING)
            .exclude(text="")
            .order_by("-number")
            .values_list("text", flat=True)
            .first()
        )
        return [
            ("final_answer", answer or "(the pass ended without a final answer)"),
            *evidence,
            *gate,
        ]

    def _bound(self, run_pass: Pass, messages: list, bound: int) -> int:
        """The judge's input counted exactly where that beats its byte bound: a 20 KB result
        bounds at 20,000 tokens by its bytes; it counts about 5,000."""
        request = self._request(run_pass, messages, JUDGE_MAX_TOKENS, seconds=60)
        return counted_bound(self.armed.model, request, bound, exact=self.armed.exact_counts)

    def _request(
        self, run_pass: Pass, messages: list, max_tokens: int, started: float | None = None, *, seconds: float
    ) -> ModelRequest:
        return ModelRequest(
            model=self.run.judge_model,
            system=judging.JUDGE_SYSTEM,
            messages=messages,
            tools=[],
            max_tokens=max_tokens,
            deadline=(time.monotonic() if started is None else started) + seconds,
            purpose=Phase.JUDGING,
            pass_number=run_pass.number,
            cancelled=self.controls.cancel_requested,
            effort=judge_effort(self.run.judge_model, self.armed.spec),
        )

    def _settle(
        self, run_pass: Pass, step: Step, reply: ModelReply, verdict, seconds: float, reservation, held
    ) -> None:
        apply_reply(step, reply, seconds)
        run_pass.verdict, run_pass.reason = verdict.label, verdict.reason
        run_pass.tokens_counted += reply.usage.counted
        with transaction.atomic():
            run_pass.save()
            Run.objects.filter(pk=self.run.pk).update(last_verdict=verdict.label)
            # the judge's clock is not the pass's: its seconds stay off the loop's clock
            reservation.settle(held, reply.usage, clock_seconds=0)
        self.run.last_verdict = verdict.label
        events.record(
            self.run,
            EventKind.VERDICT,
            f"pass {run_pass.number}: {verdict.label} — {verdict.reason}",
            number=run_pass.number,
            verdict=verdict.label,
        )
