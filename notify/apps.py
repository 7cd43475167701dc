from django.apps import AppConfig


class NotifyConfig(AppConfig):
    """Notification channels (webhook, Slack, email), the events they get, their deliveries."""

    name = "notify"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogue.checks import register  # the catalogue's hook: it cannot import notify
        from notify import receivers  # noqa: F401  (connects the signal receivers)
        from notify.selectors import unknown_channels, unsendable_to  # models load after the app registry

        register(unknown_channels)
        register(unsendable_to)
