"""Signals of spend governance."""

from django.dispatch import Signal

# sent after a transaction that settled a call holding quota reservations commits, or that
# set or removed a quota or set a price: a run that waits on a quota may fit now (runs, above
# spend, listens: runs/receivers.py). No kwargs.
quota_released = Signal()
