from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit log: one append-only row for every action a person takes (who, when, what,
    which object, from where)."""

    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import receivers  # noqa: F401  (connects the role-change receivers; models are ready now)
