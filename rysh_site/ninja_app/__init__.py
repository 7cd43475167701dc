"""django-ninja's files as this project installs them (settings.INSTALLED_APPS): its templates,
static files (the API docs' Swagger UI) and its `export_openapi_schema` command, without
importing django-ninja itself in every process.

Installed as "ninja", django-ninja's package `__init__` loads all of it (pydantic, its
operations, signatures and parsers): a `qcluster` worker carried it without serving the API
(docs/benchmarks/engine.md, "Process size"). This app points Django at the package's directory
found on the path, not imported, so ninja loads only where the URLconf loads api/ (the web
process, the tests' client). The docs page renders ninja's own template (api/docs.py): ninja
itself looks for the literal "ninja" in INSTALLED_APPS to choose it over its CDN variant.
"""

from __future__ import annotations

from importlib.util import find_spec

from django.apps import AppConfig


def _ninja_dir() -> str:
    spec = find_spec("ninja")  # finds the package without running it
    assert spec is not None and spec.submodule_search_locations, "django-ninja is not installed"
    return list(spec.submodule_search_locations)[0]


class NinjaFilesConfig(AppConfig):
    """django-ninja's directory as an app: templates/, static/ and management/ found under it."""

    name = "rysh_site.ninja_app"
    label = "ninja"
    verbose_name = "django-ninja"
    path = _ninja_dir()
