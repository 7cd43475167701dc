"""What ops does when evals sends its signals: a graded suite's span (rysh_site/tracing.py),
after the grading commits. Connected in apps.ready()."""

from __future__ import annotations

from django.db import transaction
from django.dispatch import receiver

from evals.models import Suite
from evals.signals import suite_finished
from rysh_site import tracing


@receiver(suite_finished, dispatch_uid="ops.suite_finished")
def on_suite_finished(sender, *, suite, **kwargs) -> None:
    if tracing.enabled() and (suite.trace_context or {}).get("traceparent"):
        transaction.on_commit(lambda: _trace(suite.pk))


def _trace(suite_id: int) -> None:
    suite = Suite.objects.filter(pk=suite_id).first()
    if suite is not None:
        tracing.suite_ended(suite, list(suite.cases.all()))
