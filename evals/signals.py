"""Signals other apps listen to (notifications, metrics), so that evals never imports them."""

from django.dispatch import Signal

# sent once when a suite has graded every case (or its ceiling ended it); kwargs: suite
suite_finished = Signal()
# sent with suite_finished when at least one case failed or errored (`eval.failed`); kwargs: suite
eval_failed = Signal()
