from django.apps import AppConfig
from django.db.models.signals import post_migrate

from rysh_site.roles import ROLES


def ensure_roles(sender, **kwargs) -> None:
    """The four roles are groups (rysh_site/roles.py); a user's groups are their roles."""
    from django.contrib.auth.models import Group  # models load after the app registry is ready

    for name in ROLES:
        Group.objects.get_or_create(name=name)


class CatalogueConfig(AppConfig):
    """Recipes from git: reading, validation, sync, the catalogue pages."""

    name = "catalogue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(ensure_roles, sender=self)
        # on_success chains are checked against the catalogue's tables: models are ready now
        from catalogue.chain_checks import chain_issues
        from catalogue.checks import register

        register(chain_issues)
