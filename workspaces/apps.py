from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    """Coding loops (docs/coding-loops.md): a run's own working copy, its diff, keep and discard. Old copies
    are removed by the daily retention schedule (ops/apps.py, RYSH_WORKSPACE_KEEP_DAYS)."""

    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogue.checks import register  # the catalogue's hook: it cannot import workspaces
        from workspaces.checks import working_copy_issues  # reads settings: after the registry is ready

        register(working_copy_issues)
