"""Signals other apps listen to, so that runs never import them (the import graph is one-way)."""

from django.dispatch import Signal

# sent by finish_run after the run's final state is saved; kwargs: run
run_finished = Signal()
