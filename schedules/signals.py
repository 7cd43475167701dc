"""Signals other apps listen to (notifications), so that schedules never imports them."""

from django.dispatch import Signal

# sent after a schedule is disabled for failing too often in a row; kwargs: schedule, reason
schedule_disabled = Signal()
