from datetime import timedelta

from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate
from django.utils import timezone

RETENTION_SCHEDULE = "rysh: retention prune"
RETENTION_FUNC = "ops.retention.prune_scheduled"
RETENTION_HOUR = 3  # local time (TIME_ZONE): the first prune runs at night, then every day
# the hourly schedules the daily prune replaced (it applies their settings too)
REPLACED = ("rysh: prune result snapshots", "rysh: prune working copies")


def ensure_retention_schedule(sender, **kwargs) -> None:
    """Retention applies by itself: one daily django-q2 schedule runs the whole prune (result
    snapshots and working copies included, which had hourly schedules of their own)."""
    from django_q.models import Schedule  # models load after the app registry is ready

    Schedule.objects.filter(name__in=REPLACED).delete()
    local = timezone.localtime()
    first = local.replace(hour=RETENTION_HOUR, minute=0, second=0, microsecond=0)
    if first <= local:
        first += timedelta(days=1)
    Schedule.objects.update_or_create(
        name=RETENTION_SCHEDULE,
        defaults={"func": RETENTION_FUNC, "schedule_type": Schedule.DAILY, "repeats": -1},
        create_defaults={
            "func": RETENTION_FUNC,
            "schedule_type": Schedule.DAILY,
            "repeats": -1,
            "next_run": first,
        },
    )


class OpsConfig(AppConfig):
    """Operating it (docs: Operating it): health probes, metrics, traces, retention."""

    name = "ops"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ops import receivers  # noqa: F401  (connects the signal receivers: a suite's trace)

        # ops has no models, so no post_migrate of its own: it follows django-q2's, whose
        # Schedule table exists by then
        post_migrate.connect(ensure_retention_schedule, sender=apps.get_app_config("django_q"))
