from django.apps import AppConfig
from django.db.models.signals import post_migrate


def ensure_roles(sender, **kwargs) -> None:
    """The four roles are groups (automations/roles.py); a user's groups are their roles."""
    from django.contrib.auth.models import Group

    from automations.roles import ROLES

    for name in ROLES:
        Group.objects.get_or_create(name=name)


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
        post_migrate.connect(ensure_roles, sender=self)
