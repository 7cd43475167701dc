"""What the engine's stages (runs.engine.stages) and their collaborators share: the armed job, the
loop's context (the run, its dependencies, how it pauses and finishes) and the step in hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from agents.ports import ModelPort, ToolsPort
from budgets.plan import Plan
from catalogue.recipe import render
from catalogue.spec import RecipeSpec
from policies.rules import Merged
from runs.conversation import Conversation
from runs.models import Pass, Run

if TYPE_CHECKING:  # the collaborators, named for a checker: each imports this module
    from runs.engine.controls import Controls
    from runs.engine.judge import Judge
    from runs.engine.passes import Passes
    from runs.engine.quota import Quota
    from runs.engine.step import Call
    from runs.ledger import Ledger


@dataclass
class Armed:
    spec: RecipeSpec
    plan: Plan
    output_dir: Path
    model: ModelPort
    tools: ToolsPort
    system: str
    # the working folder as the agent's commands see it (a coding run's copy), which fills
    # `{{workdir}}` in every prompt and in the judge's goal; None: no working copy
    workdir: str | None = None
    # ask the provider for exact counts near the edge and cut tool results to fit (False:
    # the byte bound alone, as before; bench.efficiency measures both)
    exact_counts: bool = True
    # the policy the run obeys (docs/policy.md): denied commands, gates of its own
    policy: Merged | None = None

    def fill(self, text: str, args: list[str]) -> str:
        """A prompt of the recipe with its placeholders filled, as the model reads it."""
        return render(text, spec=self.spec, args=args, output_dir=str(self.output_dir), workdir=self.workdir)


@dataclass(slots=True)
class StepContext:
    """The step about to be taken: its pass and leg, the conversation it extends, the tools it
    offers (as the tools port lists them now) and what is left of the leg's clock."""

    run_pass: Pass
    leg: str
    conversation: Conversation
    tools: list
    seconds_left: float


@dataclass
class LoopContext:
    """The one context every stage of the loop reads (runs.engine.stages): the run, its armed
    job and the collaborators that keep its state. `pause` and `finish` raise Interrupted with
    the outcome; the engine writes it once (runs.engine.outcome)."""

    run: Run
    armed: Armed
    ledger: Ledger
    controls: Controls
    passes: Passes
    quota: Quota
    call: Call
    judge: Judge
    pause: Callable[..., NoReturn]
    finish: Callable[[str], NoReturn]

    @property
    def plan(self) -> Plan:
        return self.armed.plan
