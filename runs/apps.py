from django.apps import AppConfig
from django.db.models.signals import post_migrate

SWEEP_SCHEDULE = "rysh: sweep lost runs"
SWEEP_FUNC = "runs.worker.sweep_lost_runs"
SESSIONS_SCHEDULE = "rysh: clear expired sessions"
SESSIONS_FUNC = "django.core.management.call_command"


def ensure_sweep_schedule(sender, **kwargs) -> None:
    """The lost-worker sweeper runs every minute on whichever cluster is up; expired sessions are
    cleared every hour. (Result snapshots are pruned by the daily retention schedule: ops/apps.py.)"""
    from django_q.models import Schedule  # models load after the app registry is ready

    Schedule.objects.update_or_create(
        name=SWEEP_SCHEDULE,
        defaults={"func": SWEEP_FUNC, "schedule_type": Schedule.MINUTES, "minutes": 1, "repeats": -1},
    )
    # Expired login sessions leave the database once an hour (the demo site keeps none).
    Schedule.objects.update_or_create(
        name=SESSIONS_SCHEDULE,
        defaults={"func": SESSIONS_FUNC, "args": "'clearsessions'", "schedule_type": Schedule.HOURLY, "repeats": -1},
    )


class RunsConfig(AppConfig):
    """Runs: the engine, its ledger, the live pages and the controls."""

    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(ensure_sweep_schedule, sender=self)
        from runs import receivers  # noqa: F401  (re-check open websockets on logouts and role changes; models are ready now)
        from runs.ledger import spent_rows  # models are ready now
        from spend import quotas  # (runs sits above spend: spend reads the ledger through this port)

        quotas.read_ledger_with(spent_rows)
