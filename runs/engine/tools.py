"""A step's tool calls run through the tools port: refused when the run was cancelled or the
model goes in circles, held for a person where the recipe says so, and a web step's capture."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings

from agents.ports import ModelReply
from runs import events
from runs.conversation import call_identity, tool_result
from runs.engine.context import Armed, StepContext
from runs.engine.controls import ApprovalGate, Controls
from runs.models import Control, Run, Step
from runs.states import EventKind
from rysh_site import metrics, tracing

log = logging.getLogger(__name__)

LOOP_WINDOW = 20  # loop detection: the last 20 tool calls of the pass...
LOOP_REPEATS = 3  # ...may hold the same call (name and input) at most 3 times


class ToolRunner:
    """The tools port, as the engine calls it: one reply's tool calls, in order."""

    def __init__(self, run: Run, armed: Armed, controls: Controls, gate: ApprovalGate):
        self.run = run
        self.armed = armed
        self.controls = controls
        self.gate = gate
        # the tools' notes the worker recorded when it armed them; later ones (an MCP server that
        # died and was restarted, or could not be reached this pass) are recorded as they come
        self._noted = len(armed.tools.notes)

    def run_calls(self, reply: ModelReply, ctx: StepContext, step: Step) -> tuple[list[dict], float]:
        """Run the reply's tool calls; returns the results and the seconds spent waiting for
        people to answer approvals."""
        results, waited = [], 0.0
        history = ctx.conversation.call_history()
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
            held = self.gate.hold(call, ctx.run_pass, step)
            if held is not None:
                refused, seconds = held
                waited += seconds
                if refused:
                    results.append(tool_result(call["id"], refused, True))
                    continue
            results.append(self._one_tool(call))
        self._record_new_notes()
        return results, waited

    def _record_new_notes(self) -> None:
        notes = self.armed.tools.notes
        for note in notes[self._noted :]:
            events.record(self.run, EventKind.NOTE, note)
        self._noted = len(notes)

    @tracing.traced_tool
    def _one_tool(self, call: dict) -> dict:
        try:
            with metrics.tool_call(call["name"]):
                outcome = self.armed.tools.call(call["name"], call.get("input") or {})
            return tool_result(call["id"], outcome.content, outcome.is_error, outcome.images)
        except Exception as exc:  # a tool bug goes back to the model, never crashes the pass
            log.exception("tool %s failed", call.get("name"))
            return tool_result(call["id"], f"tool failed: {type(exc).__name__}: {exc}", True)

    def capture(self, step: Step) -> None:
        """A web step: where the browser is now (the continue checkpoint) and a thumbnail."""
        shot = self.armed.tools.capture()
        if shot is None:
            return
        step.page_url, step.page_title = shot.url[:2000], shot.title[:300]
        if shot.jpeg:
            relative = f"{self.run.pk}/{step.run_pass.number}-{step.number}.jpg"
            path = Path(settings.RYSH_SCREENSHOTS_DIR) / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(shot.jpeg)
            step.screenshot = relative
