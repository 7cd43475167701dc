from django.apps import AppConfig
from django.db.models.signals import post_migrate


def ensure_schedules(sender, **kwargs) -> None:
    """The lost-worker sweeper runs every minute on whichever cluster is up."""
    from django_q.models import Schedule

    Schedule.objects.update_or_create(
        name="rysh: sweep lost runs",
        defaults={"func": "automations.tasks.sweep_lost_runs", "schedule_type": Schedule.MINUTES,
                  "minutes": 1, "repeats": -1},
    )


class AutomationsConfig(AppConfig):
    name = "automations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(ensure_schedules, sender=self)
