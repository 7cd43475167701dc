"""A model port for engine tests: scripted turns per leg, usage computed from the request.

`adversarial=True` makes it spend the most any call could: its counted input is the full
byte bound of what it was sent and its output is exactly max_tokens, so the ceiling
tests hold against the worst model, not a polite one.
"""

from __future__ import annotations

import math
import threading
import time

from agents.ports import ModelCancelled, ModelError, ModelReply, Usage
from budgets.guard import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, size


def tool(name, **arguments):
    return {"name": name, "input": arguments}


class FakeModel:
    label = "fake (tests)"

    def __init__(
        self, *, task=None, wrap_up=None, judge=None, adversarial=False, repeat_last=True, delay=0.0, on_call=None
    ):
        self.turns = {
            "task": task or [{"text": "done"}],
            "wrap-up": wrap_up or [{"text": "landed"}],
            "judging": judge or ["YES\nlooks complete"],
        }
        self.adversarial = adversarial
        self.repeat_last = repeat_last
        self.delay = delay
        self.on_call = on_call
        self.requests = []
        self.calls = 0
        self.lock = threading.Lock()

    def complete(self, request):
        with self.lock:
            self.calls += 1
            self.requests.append(request)
        if self.on_call:
            self.on_call(request)
        deadline = time.monotonic() + self.delay
        while time.monotonic() < deadline:
            if request.cancelled():
                raise ModelCancelled()
            time.sleep(0.01)
        if request.cancelled():
            raise ModelCancelled()
        turns = self.turns[request.purpose]
        index = sum(1 for m in request.messages[request.leg_start :] if m["role"] == "assistant")
        if request.purpose == "judging":
            index = request.pass_number - 1
        if index >= len(turns):
            if not self.repeat_last:
                return self._reply(request, [{"type": "text", "text": "Done."}])
            index = len(turns) - 1
        turn = turns[index]
        if isinstance(turn, Exception):
            raise turn
        if isinstance(turn, str):
            return self._reply(request, [{"type": "text", "text": turn}])
        content = []
        if turn.get("text"):
            content.append({"type": "text", "text": turn["text"]})
        for k, call in enumerate(turn.get("tools", [])):
            content.append(
                {"type": "tool_use", "id": f"toolu_{self.calls}_{k}", "name": call["name"], "input": call["input"]}
            )
        return self._reply(request, content)

    def count_tokens(self, request):
        """Exactly the input its reply to `request` would report (the full byte bound when
        adversarial), as a provider's token-counting endpoint would."""
        full = (
            size(request.system)
            + size(request.tools)
            + size(request.messages)
            + REQUEST_OVERHEAD
            + MESSAGE_OVERHEAD * len(request.messages)
        )
        return full if self.adversarial else math.ceil(full / 4)

    def _reply(self, request, content):
        full = (
            size(request.system)
            + size(request.tools)
            + size(request.messages)
            + REQUEST_OVERHEAD
            + MESSAGE_OVERHEAD * len(request.messages)
        )
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        if self.adversarial:
            input_tokens, output = full, request.max_tokens
        else:
            input_tokens, output = math.ceil(full / 4), max(1, math.ceil(size(content) / 4))
            if output > request.max_tokens:
                output, stop = request.max_tokens, "max_tokens"
                content = [b for b in content if b["type"] == "text"] or [{"type": "text", "text": "…"}]
        return ModelReply(
            content=content, stop_reason=stop, usage=Usage(input_tokens=input_tokens, output_tokens=output)
        )


class Failing:
    """A turn that raises ModelError (an API that keeps failing)."""

    def __new__(cls, message="overloaded (529) after 4 attempts"):
        return ModelError(message)
