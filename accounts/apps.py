from django.apps import AppConfig
from django.core import checks


class AccountsConfig(AppConfig):
    """Company login by OpenID Connect (mozilla-django-oidc), the roles a provider's groups give,
    and the switch that leaves passwords to the break-glass users (docs/login.md)."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # With --deploy only: every manage.py command runs the default checks (the `auto` CLI, the
        # workers), and none of them should need the provider to answer. The web server checks it
        # when it starts (rysh_site/asgi.py).
        checks.register(_provider_deploy_check, "oidc", deploy=True)


def _provider_deploy_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """accounts.oidc's check, imported when it runs: the OIDC client (mozilla-django-oidc,
    requests) stays out of the processes that never check it, an idle worker among them
    (docs/benchmarks/engine.md, "Process size")."""
    from accounts.oidc import provider_deploy_check  # its client loads only where the check runs

    return provider_deploy_check(app_configs, **kwargs)
