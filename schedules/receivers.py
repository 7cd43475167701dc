"""What schedules do when a run finishes or the catalogue syncs: connected in apps.ready()."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from catalogue.signals import recipes_synced
from runs.signals import run_finished
from schedules.services import schedule_run_finished, schedules_sync_recipes

log = logging.getLogger(__name__)


@receiver(run_finished, dispatch_uid="schedules.run_finished")
def count_outcome(sender, *, run, **kwargs) -> None:
    """A scheduled run's outcome grows or resets its schedule's run of failures."""
    schedule_run_finished(run)


@receiver(recipes_synced, dispatch_uid="schedules.recipes_synced")
def follow_recipes(sender, **kwargs) -> None:
    """Recipes' `schedule:` -> their auto-<kind>-<name> schedules, after the catalogue is written."""
    for line in schedules_sync_recipes():
        log.info("%s", line)
