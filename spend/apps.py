from django.apps import AppConfig


class SpendConfig(AppConfig):
    """Spend governance: quotas across runs, model prices, the Spend page."""

    name = "spend"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from spend import receivers  # noqa: F401  (connects the signal receivers)
