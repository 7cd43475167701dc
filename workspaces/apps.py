from django.apps import AppConfig
from django.db.models.signals import post_migrate

PRUNE_SCHEDULE = "rysh: prune working copies"


def ensure_prune_schedule(sender, **kwargs) -> None:
    """RYSH_WORKSPACE_KEEP_DAYS applies by itself: the workers prune old copies every hour."""
    from django_q.models import Schedule  # models load after the app registry is ready

    Schedule.objects.update_or_create(
        name=PRUNE_SCHEDULE,
        defaults={
            "func": "django.core.management.call_command",
            "args": "'prune_workspaces'",
            "schedule_type": Schedule.HOURLY,
            "repeats": -1,
        },
    )


class WorkspacesConfig(AppConfig):
    """Coding loops (SPEC §11): a run's own working copy, its diff, keep and discard."""

    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogue.checks import register  # the catalogue's hook: it cannot import workspaces
        from workspaces.checks import workdir_issues  # reads settings: after the registry is ready

        register(workdir_issues)
        post_migrate.connect(ensure_prune_schedule, sender=self)
