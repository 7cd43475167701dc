"""The metrics settings' checks (docs: Metrics), run by settings.py when RYSH_METRICS=true."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from rysh_site.security import private_dir

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def require_guard(token: str, allow: list) -> None:
    """/metrics is never open to anyone: a bearer token, an allow-list of addresses, or both."""
    if not token and not allow:
        raise ImproperlyConfigured(
            "RYSH_METRICS=true needs RYSH_METRICS_TOKEN (a bearer token the scraper sends) and/or "
            "RYSH_METRICS_ALLOW (the addresses or networks allowed to scrape): neither is set"
        )


def share_dir(path: Path) -> None:
    """The directory this machine's web and worker processes write their figures to
    (prometheus_client's multiprocess mode). prometheus_client picks its mode when it is first
    imported, so the variable must be set before that: a process that imported it earlier
    would keep its figures to itself, which is refused rather than silently lost."""
    if os.environ.get(MULTIPROC_ENV) != str(path) and "prometheus_client" in sys.modules:
        raise ImproperlyConfigured(
            f"RYSH_METRICS=true: prometheus_client was imported before the settings set {MULTIPROC_ENV}"
        )
    private_dir(path)
    os.environ[MULTIPROC_ENV] = str(path)
