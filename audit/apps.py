from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AuditConfig(AppConfig):
    """The audit log: one append-only row for every action a person takes (who, when, what,
    which object, from where)."""

    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import receivers  # noqa: F401  (connects the role-change receivers; models are ready now)
        from audit.retention import audit_retention_on_migrate

        post_migrate.connect(audit_retention_on_migrate, sender=self)
