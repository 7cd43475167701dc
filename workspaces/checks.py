"""The recipe check that needs the repository: `workdir:` names a folder that exists there
(SPEC §11). Registered with catalogue.checks, so sync, `auto check` and the editor report it
at the `workdir:` line like any other recipe error."""

from __future__ import annotations

from pathlib import PurePath

from catalogue.recipe import RecipeIssue
from catalogue.spec import RecipeSpec
from workspaces.source import SourceError, source_for


def workdir_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    if spec.workdir is None:
        return []
    label = PurePath(spec.path).name
    try:
        source = source_for(recipe_path=spec.path)
    except SourceError as exc:
        return [RecipeIssue(label, spec.workdir_line, "workdir", str(exc))]
    if source.has_folder(spec.workdir):
        return []
    return [
        RecipeIssue(
            label,
            spec.workdir_line,
            "workdir",
            f'expected "." or a folder of the repository, got {spec.workdir!r}: no such folder in '
            f"{source.shown} at {source.commit[:8]}",
        )
    ]
