"""Signals other apps listen to (notifications), so that reviews never imports them."""

from django.dispatch import Signal

# each sent by reviews.services after the change request's state is saved; kwargs: change
change_opened = Signal()
change_updated = Signal()  # a new revision from the author (evals start their suites on it)
change_approved = Signal()  # merged into the tracked branch
change_conflict = Signal()  # approved, but the merge conflicts
