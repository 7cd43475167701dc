"""/api/packages: rysh's packages in the catalogue (docs/packages.md). Scope: read."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema

from api.views.common import acting
from catalogue.package_selectors import package_list

router = Router(tags=["packages"])


class ToolOut(Schema):
    name: str
    available: bool
    meaning: str


class PackageOut(Schema):
    name: str  # the folder's name, what `auto agent run` takes
    label: str  # name@version
    version: str
    type: str
    description: str
    tools: list[ToolOut]
    evals: list[str]
    runnable: bool
    newest_broken: bool
    errors: list[str]
    commit: str


class PackageListOut(Schema):
    packages: list[PackageOut]


@router.get("/packages", response=PackageListOut)
def package_list_api(request: HttpRequest):
    """Every active package: its version, type, declared tools (the ones not available here
    marked), eval cases, and the errors of a broken newest version. Scope: read."""
    with acting(request, "read"):
        return {"packages": [_shown(row) for row in package_list()]}


def _shown(row) -> dict:
    shown = row.package.good or row.package.latest
    return {
        "name": row.name,
        "label": row.label,
        "version": row.version,
        "type": row.type,
        "description": row.description,
        "tools": [
            {"name": tool, "available": tool not in row.unavailable, "meaning": meaning}
            for tool, meaning in row.tool_rows
        ],
        "evals": list(row.evals),
        "runnable": row.runnable,
        "newest_broken": row.broken,
        "errors": list(row.errors) if row.broken else [],
        "commit": shown.commit_sha if shown else "",
    }
