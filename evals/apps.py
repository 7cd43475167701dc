from django.apps import AppConfig


class EvalsConfig(AppConfig):
    """A recipe's tests: eval cases in rysh's format, suites run under a hard ceiling, graded
    against what each run did (docs/evals.md)."""

    name = "evals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from evals import receivers  # noqa: F401 (grading when a case's run ends)
