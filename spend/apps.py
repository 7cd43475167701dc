from django.apps import AppConfig


class SpendConfig(AppConfig):
    """Spend governance: quotas across runs, model prices, the Spend page."""

    name = "spend"
    default_auto_field = "django.db.models.BigAutoField"
