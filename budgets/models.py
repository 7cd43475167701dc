"""The append-only token ledger: one entry per model call that can cost money."""
from __future__ import annotations

from django.db import models


class LedgerEntry(models.Model):
    run = models.ForeignKey("automations.Run", on_delete=models.CASCADE, related_name="ledger")
    # One entry per step at most, so settling a step twice cannot count its tokens twice.
    step = models.OneToOneField("automations.Step", null=True, blank=True,
                                on_delete=models.CASCADE, related_name="ledger_entry")
    pass_number = models.PositiveIntegerField()
    purpose = models.CharField(max_length=10)  # task | wrap-up | judge
    model = models.CharField(max_length=100)
    input_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    counted_tokens = models.BigIntegerField()  # input + cache write + output
    estimated = models.BooleanField(default=False)  # a reservation counted in full (lost/cancelled)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
