"""Signals of spend governance."""

from django.dispatch import Signal

# sent after a transaction that settled a call holding quota reservations commits: a run that
# waits on a quota may fit now. No kwargs.
quota_released = Signal()
