from django.apps import AppConfig


class EvalsConfig(AppConfig):
    """A recipe's tests: eval cases in rysh's format, suites run under a hard ceiling, graded
    against what each run did (docs/evals.md)."""

    name = "evals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the ports of the apps below, wired once the apps are loaded: runs' signals grade a case
        # when its run ends; reviews asks evals about merges through a list it holds
        # (MERGE_CHECKS), and tells it about opened and revised changes with its signals
        from evals import receivers  # noqa: F401  (connected on import)
        from evals.review_hooks import connect as review_hooks_connect  # reviews' signals
        from evals.selectors import merge_blockers  # the merge gate
        from reviews.services import MERGE_CHECKS  # the port reviews holds

        if merge_blockers not in MERGE_CHECKS:
            MERGE_CHECKS.append(merge_blockers)
        review_hooks_connect()
