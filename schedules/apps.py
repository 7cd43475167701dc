from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    """Recipes' `schedule:` and hand-made schedules on django-q2's scheduler."""

    name = "schedules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from schedules import receivers  # noqa: F401  (connects the signal receivers)
