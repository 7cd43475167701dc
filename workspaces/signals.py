"""Signals of the working copies. Workspaces sit below runs: what happens to a copy is said on
its run's page through this signal, which runs listens to (runs/receivers.py)."""

from django.dispatch import Signal

# a note for the run's page and live stream: kwargs run (runs.Run), message (str). Sent inside
# the transaction that made the change, so the note and the change commit together.
workspace_noted = Signal()
