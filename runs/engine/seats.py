"""Which model and effort each leg's calls use (docs/running-loops.md, "Models and efforts"): the
task leg its own (`loop.do.model`/`effort`, else the recipe's top-level ones), the wrap-up leg
`loop.do.budget.watch.model`/`effort` (else the task leg's), the judge `loop.while.model`/`effort`.
An effort is sent only to a model that takes one (budgets.efforts)."""

from __future__ import annotations

from budgets.efforts import takes_effort
from catalogue.spec import RecipeSpec
from runs.models import Run
from runs.states import Phase

SCRIPTED = "scripted"  # the offline provider: one scripted model plays every seat


def leg_model(run: Run, spec: RecipeSpec, leg: str) -> str:
    """The model a task or wrap-up step calls. The run's executor model was chosen (and checked)
    when it started; the wrap-up's own model is the recipe's, unless the run is scripted."""
    if leg == Phase.WRAP_UP and spec.do.watch_model and run.provider != SCRIPTED:
        return spec.do.watch_model
    return run.executor_model


def leg_effort(model: str, spec: RecipeSpec, leg: str) -> str | None:
    effort = spec.wrapup_effort if leg == Phase.WRAP_UP else spec.task_effort
    return effort if effort and takes_effort(model) else None


def judge_effort(model: str, spec: RecipeSpec) -> str | None:
    effort = spec.loop_while.effort
    return effort if effort and takes_effort(model) else None
