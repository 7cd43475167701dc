"""django-ninja's `export_openapi_schema`, found under ninja's directory (rysh_site/ninja_app)."""

from ninja.management.commands.export_openapi_schema import Command

__all__ = ["Command"]
