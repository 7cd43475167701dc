"""django-q2's app as this project installs it (settings.INSTALLED_APPS): the same app, loaded
without prometheus_client when metrics are off.

django_q.conf imports prometheus_client when it can (to mark a dead worker's metrics file), and
every process of the app loads django_q: with RYSH_METRICS off nothing reads those figures, so
prometheus_client is hidden from that one import and a worker stays smaller for it
(docs/benchmarks/engine.md, "Process size"). With metrics on, or prometheus_client already loaded,
django_q imports it as it always does.
"""

from __future__ import annotations

import os
import sys

from django.conf import settings

from rysh_site.metrics_env import MULTIPROC_ENV

PROMETHEUS = "prometheus_client"


def _metrics_wanted() -> bool:
    return bool(settings.RYSH_METRICS or os.environ.get(MULTIPROC_ENV)) or PROMETHEUS in sys.modules


if _metrics_wanted() or "django_q.conf" in sys.modules:
    from django_q.apps import DjangoQConfig as _DjangoQConfig
else:
    sys.modules[PROMETHEUS] = None  # django_q.conf's optional import then finds no module
    try:
        from django_q.apps import DjangoQConfig as _DjangoQConfig
    finally:
        if sys.modules.get(PROMETHEUS, PROMETHEUS) is None:
            del sys.modules[PROMETHEUS]


class QueueConfig(_DjangoQConfig):
    """django_q's own app: its label, models and migrations, unchanged."""
