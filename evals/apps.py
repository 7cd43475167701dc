from django.apps import AppConfig


class EvalsConfig(AppConfig):
    """A recipe's tests: eval cases in rysh's format, suites run under a hard ceiling, graded
    against what each run did (docs/evals.md)."""

    name = "evals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from evals import receivers  # noqa: F401 (grading when a case's run ends)
        from evals.grade_run import cases_sweep_lost  # the sweeper's port is filled once apps are ready
        from runs.worker import EXTRA_SWEEPS  # (runs never imports evals)

        if cases_sweep_lost not in EXTRA_SWEEPS:
            EXTRA_SWEEPS.append(cases_sweep_lost)
