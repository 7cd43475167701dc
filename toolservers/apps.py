from django.apps import AppConfig


class ToolServersConfig(AppConfig):
    """MCP servers a team registers once (issue 26): their tools for the recipes that name them."""

    name = "toolservers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogue.checks import register  # the catalogue's hook: it cannot import this app
        from toolservers.checks import mcp_issues  # models load after the app registry is ready

        register(mcp_issues)
