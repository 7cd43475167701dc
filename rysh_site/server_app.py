"""daphne's app as this project installs it (settings.INSTALLED_APPS): its `runserver` command,
without loading the server itself in every process.

daphne's own AppConfig module imports `daphne.server`, which installs Twisted's asyncio reactor
and with it Twisted, autobahn and pyOpenSSL: ~20 MiB in every process of the app, a `qcluster`
worker too, that never serves a request (docs/benchmarks/engine.md, "Process size"). This config
names the same package (`daphne`, whose `__init__` is a version string) so Django still finds its
`runserver` command, which imports `daphne.server` itself; the `daphne` command (Procfile's `web`)
imports it before it loads the app, as it always did.
"""

from __future__ import annotations

from django.apps import AppConfig


class ServerConfig(AppConfig):
    """daphne's app: its label and its `runserver`, which wins over staticfiles' (listed first)."""

    name = "daphne"
    verbose_name = "Daphne"
