"""The worker's start (`manage.py qcluster`, Procfile's `worker`): django-q2's command with every
system check but the URLconf's.

Django's URL checks import the whole URLconf (every view, form and the API with django-ninja):
~38 MiB that the cluster's parent loaded before forking its workers, each of which then carried
it idle without serving a page (docs/benchmarks/engine.md, "Process size"). The URLconf is
checked wherever it is served or tested (`manage.py check`, the web process on its first
request, the test suite); every other check still runs before a worker starts. Listed before
django-q2's app in INSTALLED_APPS, so its `qcluster` is the one Django runs.
"""

from __future__ import annotations

from django.apps import AppConfig


class WorkerConfig(AppConfig):
    """Holds management/commands/qcluster.py; no models."""

    name = "rysh_site.worker_app"
    label = "rysh_worker"
    verbose_name = "rysh worker"
