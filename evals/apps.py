from django.apps import AppConfig


class EvalsConfig(AppConfig):
    """A recipe's tests: eval cases in rysh's format, suites run under a hard ceiling, graded
    against what each run did (docs/evals.md)."""

    name = "evals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the ports of the apps below, wired once the apps are loaded (they never import evals):
        # runs' signals grade a case when its run ends, and its sweeper finds lost ones; reviews
        # asks evals about merges through a list it holds (MERGE_CHECKS), and tells it about
        # opened and revised changes with its signals
        from evals import receivers  # noqa: F401  (connected on import)
        from evals.grade_run import cases_sweep_lost  # the sweeper's port
        from evals.review_hooks import connect as review_hooks_connect  # reviews' signals
        from evals.selectors import merge_blockers  # the merge gate
        from reviews.services import MERGE_CHECKS  # the port reviews holds
        from runs.worker import EXTRA_SWEEPS  # the port runs holds

        if cases_sweep_lost not in EXTRA_SWEEPS:
            EXTRA_SWEEPS.append(cases_sweep_lost)
        if merge_blockers not in MERGE_CHECKS:
            MERGE_CHECKS.append(merge_blockers)
        review_hooks_connect()
