"""Schedules (docs/schedules.md): each rides on a django-q2 Schedule; this row keeps what django-q2
does not — where it came from, its timezone and its run of failures."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RecipeSchedule(models.Model):
    RECIPE = "recipe"  # from a recipe's `schedule:`, named auto-<kind>-<name>, kept by the sync
    MANUAL = "manual"  # added by hand (`auto <kind> schedule add`)

    name = models.CharField(max_length=100, unique=True)
    q = models.OneToOneField("django_q.Schedule", on_delete=models.CASCADE, related_name="rysh")
    origin = models.CharField(max_length=10, choices=[(RECIPE, RECIPE), (MANUAL, MANUAL)])
    kind = models.CharField(max_length=8)
    recipe = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    when = models.CharField(max_length=100)  # as written: "0 7 * * *", "@daily", "@every 30m"
    timezone = models.CharField(max_length=64, blank=True)  # empty: TIME_ZONE
    enabled = models.BooleanField(default=True)
    failures = models.PositiveIntegerField(default=0)  # consecutive
    disabled_reason = models.CharField(max_length=500, blank=True)
    last_tick_at = models.DateTimeField(null=True, blank=True)
    last_message = models.CharField(max_length=500, blank=True)
    last_run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # whom its runs are started for: their user quota counts them and the run names them;
    # none (a recipe's own `schedule:` starts so) counts against the installation and recipe only
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "automations_recipeschedule"  # named before the apps split (see migrations/0001)
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def command(self) -> str:
        return " ".join([self.kind, "run", self.recipe, *self.args])
