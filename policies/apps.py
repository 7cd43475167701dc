from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    """A team's policy file (docs/policy.md): `.rysh/policy.yaml` from the recipes repository and
    the organisation's policy, merged strictest-wins and applied to every run."""

    name = "policies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the catalogue's sync signal, and reviews' merge gate (a port reviews holds: it never
        # imports policies)
        from policies import receivers  # noqa: F401  (connected on import)
        from policies.review_checks import policy_merge_blockers
        from reviews.services import MERGE_CHECKS

        if policy_merge_blockers not in MERGE_CHECKS:
            MERGE_CHECKS.append(policy_merge_blockers)
