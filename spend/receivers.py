"""What spend does when its own signals fire: connected in apps.ready()."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from runs.models import Run, RunState
from spend.services import QUOTA_PAUSE, quota_wake
from spend.signals import quota_released

log = logging.getLogger(__name__)


@receiver(quota_released, dispatch_uid="spend.quota_released")
def on_quota_released(sender, **kwargs) -> None:
    """Calls settled below what they had reserved: runs waiting on a quota may fit now."""
    try:
        if Run.objects.filter(state=RunState.PAUSED, pause_reason__startswith=QUOTA_PAUSE).exists():
            quota_wake()
    except Exception:  # waking is also the sweeper's job each minute: never fail a settle for it
        log.exception("runs paused on a quota not woken now; the sweeper tries again")
