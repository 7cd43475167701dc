"""The recipe checks that need the repository: `base:` names a branch, tag or commit of it, and
`workdir:` a folder that exists there at that commit (docs/coding-loops.md). Registered with
catalogue.checks, so sync, `auto check` and the editor report them at their lines like any
other recipe error."""

from __future__ import annotations

from pathlib import PurePath

from catalogue.recipe import RecipeIssue
from catalogue.spec import RecipeSpec
from workspaces.source import SourceError, source_for


def working_copy_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    if spec.workdir is None:
        return []
    label = PurePath(spec.path).name
    try:
        source = source_for(recipe_path=spec.path, ref=spec.base)
    except SourceError as exc:
        if spec.base is None:
            return [RecipeIssue(label, spec.workdir_line, "workdir", str(exc))]
        return [RecipeIssue(label, spec.base_line, "base", f"expected a branch, tag or commit: {exc}")]
    if source.has_folder(spec.workdir):
        return []
    return [
        RecipeIssue(
            label,
            spec.workdir_line,
            "workdir",
            f'expected "." or a folder of the repository, got {spec.workdir!r}: no such folder in '
            f"{source.shown} at {source.commit[:8]}" + (f" ({source.ref})" if spec.base else ""),
        )
    ]
