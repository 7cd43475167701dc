from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Model providers and tools (no models): an app only for its templates and web_login."""

    name = "agents"
