"""django-q2 entry points: ids in, the engine or a service called, nothing else."""
from __future__ import annotations

from pathlib import Path

from django_q.tasks import async_task

from automations import engine
from automations.agent.ports import ModelPort
from automations.agent.providers import model_for
from automations.agent.task_tools import TaskTools
from automations.arming import arm, system_prompt
from automations.models import Run


def enqueue_run(run_id: int) -> None:
    async_task("automations.tasks.execute_run", run_id, task_name=f"run-{run_id}", group="runs")


def arm_run(run: Run, model: ModelPort | None = None) -> engine.Armed:
    spec, plan = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=run.overrides)
    output_dir = Path(run.output_dir)
    return engine.Armed(spec=spec, plan=plan, output_dir=output_dir, model=model or model_for(run),
                        tools=TaskTools(output_dir), system=system_prompt(spec, run.output_dir))


def execute_run(run_id: int) -> None:
    engine.execute(run_id, arm_run)


def sweep_lost_runs() -> list[str]:
    from automations.services import runs_sweep_lost

    return runs_sweep_lost()
