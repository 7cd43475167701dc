from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    """A team's policy file (docs/policy.md): `.rysh/policy.yaml` from the recipes repository and
    the organisation's policy, merged strictest-wins and applied to every run."""

    name = "policies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from policies import receivers  # noqa: F401  (connects the catalogue's sync signal)
