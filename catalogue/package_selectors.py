"""Reads of the catalogue's packages for the pages, the API and `auto agent list` (docs/packages.md)."""

from __future__ import annotations

from dataclasses import dataclass

from catalogue.models import Package, PackageVersion
from catalogue.packages import TOOL_MEANING

NOT_AVAILABLE = "not available here"


@dataclass(frozen=True)
class PackageRow:
    name: str  # the folder's name: what `auto agent run` takes
    label: str  # `@rysh/test-fixer@0.1.0`
    version: str
    type: str
    description: str
    tools: tuple[str, ...]
    evals: tuple[str, ...]
    runnable: bool  # it has a good version
    broken: bool  # its newest version does not read
    errors: tuple[str, ...]
    package: Package

    @property
    def tool_rows(self) -> list[tuple[str, str]]:
        """(tool, what it is here) for each declared tool."""
        return [(tool, TOOL_MEANING.get(tool, NOT_AVAILABLE)) for tool in self.tools]

    @property
    def unavailable(self) -> tuple[str, ...]:
        return tuple(tool for tool in self.tools if tool not in TOOL_MEANING)


def package_row(package: Package) -> PackageRow:
    shown: PackageVersion | None = package.good or package.latest
    info = (shown.info if shown else {}) or {}
    newest = (package.latest.info if package.latest else {}) or {}
    return PackageRow(
        name=package.name,
        label=shown.label if shown else package.name,
        version=info.get("version", ""),
        type=info.get("type", ""),
        description=info.get("description", ""),
        tools=tuple(newest.get("tools", info.get("tools", ()))),  # as the newest manifest declares them
        evals=tuple(info.get("evals", ())),
        runnable=package.good_id is not None,
        broken=bool(package.latest and not package.latest.valid),
        errors=tuple(package.latest.errors if package.latest else ()),
        package=package,
    )


def package_list() -> list[PackageRow]:
    packages = Package.objects.filter(archived=False).select_related("good", "latest")
    return [package_row(package) for package in packages]


def package_get(name: str) -> Package | None:
    return Package.objects.filter(name=name, archived=False).select_related("good", "latest").first()
