from django.apps import AppConfig


class ToolServersConfig(AppConfig):
    """MCP servers a team registers once (docs/mcp.md): their tools for the recipes that name them."""

    name = "toolservers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.mcp_logs import redact_client_logs  # once the logging settings are applied
        from catalogue.checks import register, register_stored  # the catalogue's hooks: it cannot import this app
        from toolservers.checks import mcp_issues, unregistered_servers  # models load after the registry is ready

        register(mcp_issues)
        register_stored(unregistered_servers)
        redact_client_logs()  # a server URL's key never reaches a log line
