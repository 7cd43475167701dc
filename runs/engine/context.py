"""What the engine (runs.engine) and its collaborators share: the armed job, the step in hand,
and the exception with which a worker lets go of a paused run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agents.ports import ModelPort, ToolsPort
from budgets.plan import Plan
from catalogue.recipe import render
from catalogue.spec import RecipeSpec
from runs.conversation import Conversation
from runs.models import Pass


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
    # the working folder as the agent's commands see it (a coding run's copy), which fills
    # `{{workdir}}` in every prompt and in the judge's goal; None: no working copy
    workdir: str | None = None
    # ask the provider for exact counts near the edge and cut tool results to fit (False:
    # the byte bound alone, as before; bench.efficiency measures both)
    exact_counts: bool = True

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
