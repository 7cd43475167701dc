"""What evals does when a run ends or pauses (runs' signals; runs never imports evals)."""

from __future__ import annotations

from django.dispatch import receiver

from evals.grade_run import case_run_ended, case_run_paused
from runs.signals import run_finished, run_paused


@receiver(run_finished, dispatch_uid="evals.case_run_ended")
def _run_finished(sender, run, **kwargs):
    case_run_ended(run)


@receiver(run_paused, dispatch_uid="evals.case_run_paused")
def _run_paused(sender, run, reason="", **kwargs):
    case_run_paused(run, reason)
