"""Signals other apps listen to, so that runs never import them (the import graph is one-way)."""

from django.dispatch import Signal

# sent by finish_run after the run's final state is saved; kwargs: run
run_finished = Signal()

# sent by approvals.request after the approval is recorded; kwargs: approval
approval_requested = Signal()
# sent when a run is left paused for a person (cancelled, step cap, worker lost, quota);
# kwargs: run, reason
run_paused = Signal()
# sent when the job's counted tokens first reach a share of its outer total (50, 80, 95);
# kwargs: run, percent. Receivers keep it once per run (a continued pass may cross again).
budget_crossed = Signal()
