"""Recipe files in the working tree of the configured recipes repository.

The git-backed catalogue (sync, versions, review) builds on this; here a name
or a path becomes a file, and the tree becomes a list of parsed recipes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from catalogue.recipe import RecipeError, load_recipe
from catalogue.spec import FOLDERS, KINDS, Kind, RecipeSpec

AUTOMATIONS = Path(".rysh") / "automations"


@dataclass(frozen=True)
class RecipeFile:
    path: Path
    kind: Kind
    name: str
    spec: RecipeSpec | None
    error: RecipeError | None


def find_recipe(name_or_path: str, *, kind: str, root: str | Path) -> Path:
    """A path to an existing file, or `<root>/.rysh/automations/<folder>/<name>.md`."""
    given = Path(name_or_path)
    if given.suffix == ".md" or given.is_file() or "/" in name_or_path:
        if not given.is_file():
            raise FileNotFoundError(f"{name_or_path}: no such recipe file")
        return given
    candidate = Path(root) / AUTOMATIONS / FOLDERS[kind] / f"{name_or_path}.md"
    if not candidate.is_file():
        raise FileNotFoundError(f"no {kind} recipe named {name_or_path!r}: looked for {candidate}")
    return candidate


def list_recipes(root: str | Path) -> list[RecipeFile]:
    found = []
    for folder, kind in sorted(KINDS.items()):
        for path in sorted((Path(root) / AUTOMATIONS / folder).glob("*.md")):
            try:
                spec, error = load_recipe(path, kind=kind), None
            except RecipeError as exc:
                spec, error = None, exc
            found.append(RecipeFile(path=path, kind=kind, name=path.stem, spec=spec, error=error))
    return found
