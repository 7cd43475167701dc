from django.apps import AppConfig


class CliConfig(AppConfig):
    """The `auto` command (docs/command-line.md): a front door on top of every app, one module of
    verbs per domain. Nothing but the command imports it (the API shares services, not verbs)."""

    name = "cli"
    verbose_name = "command line"
