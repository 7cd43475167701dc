"""The ledger: reserve before a model call, settle after it (and settle what a dead worker left)."""
from __future__ import annotations

from django.db import transaction
from django.db.models import F

from runs.models import LedgerEntry, Run, Step, StepStatus


def settle_pending_steps(run: Run) -> int:
    """A worker died mid-call: its pending steps stay counted at their reservation."""
    settled = 0
    for step in Step.objects.filter(run_pass__run=run, status=StepStatus.PENDING).select_related("run_pass"):
        with transaction.atomic():
            if Step.objects.filter(pk=step.pk, status=StepStatus.PENDING).update(
                    status=StepStatus.LOST, counted_tokens=F("reserved_tokens")) != 1:
                continue  # settled by someone else meanwhile
            step.refresh_from_db()
            LedgerEntry.objects.get_or_create(step=step, defaults=dict(
                run=run, pass_number=step.run_pass.number, purpose=step.leg, model=step.model,
                counted_tokens=step.reserved_tokens, estimated=True))
            settled += 1
    return settled
