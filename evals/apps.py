from django.apps import AppConfig


class EvalsConfig(AppConfig):
    """A recipe's tests: eval cases in rysh's format, suites run under a hard ceiling, graded
    against what each run did (docs/evals.md)."""

    name = "evals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the ports of the apps below: reviews asks evals about merges through a list it holds,
        # and tells it about opened and revised changes with its signals
        from evals import (
            receivers,  # noqa: F401 (grading when a case's run ends)
            review_hooks,
        )
        from evals.selectors import merge_blockers
        from reviews.services import MERGE_CHECKS

        if merge_blockers not in MERGE_CHECKS:
            MERGE_CHECKS.append(merge_blockers)
        review_hooks.connect()
