"""`manage.py qcluster`: django-q2's, run after every system check but the URLconf's
(rysh_site/worker_app: a worker never loads the views)."""

from __future__ import annotations

from contextlib import contextmanager

from django.core.checks import Tags
from django.core.checks.registry import registry
from django_q.management.commands.qcluster import Command as QclusterCommand


@contextmanager
def without_url_checks():
    """The registry's checks tagged `urls` set aside for the duration, then put back."""
    url_checks = {check for check in registry.registered_checks if Tags.urls in getattr(check, "tags", ())}
    registry.registered_checks -= url_checks
    try:
        yield url_checks
    finally:
        registry.registered_checks |= url_checks


class Command(QclusterCommand):
    def check(self, *args, **kwargs):
        with without_url_checks():
            return super().check(*args, **kwargs)
