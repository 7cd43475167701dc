from django.apps import AppConfig
from django.db.models.signals import post_migrate

SWEEP_SCHEDULE = "rysh: sweep lost runs"
SWEEP_FUNC = "runs.worker.sweep_lost_runs"


def ensure_sweep_schedule(sender, **kwargs) -> None:
    """The lost-worker sweeper runs every minute on whichever cluster is up."""
    from django_q.models import Schedule  # models load after the app registry is ready

    Schedule.objects.update_or_create(
        name=SWEEP_SCHEDULE,
        defaults={"func": SWEEP_FUNC, "schedule_type": Schedule.MINUTES, "minutes": 1, "repeats": -1},
    )


class RunsConfig(AppConfig):
    """Runs: the engine, its ledger, the live pages and the controls."""

    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(ensure_sweep_schedule, sender=self)
