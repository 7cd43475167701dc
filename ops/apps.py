from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operating it (docs: Operating it): health probes, metrics, traces, retention."""

    name = "ops"
    default_auto_field = "django.db.models.BigAutoField"
