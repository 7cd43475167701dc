"""Where cases are read from (docs/evals.md): the recipes repository at a commit, a folder on
disk in rysh's package layout, and the recipe page's view of a catalogue recipe (cached per
commit: a commit never changes, so neither do its cases)."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path

from django.conf import settings

from catalogue.models import Recipe, RepoState
from catalogue.repo import GitRepo, RepoError, open_repo, redact
from evals.format import (
    CASE_FILES,
    FILES_DIR,
    MAX_FILES_BYTES,
    MAX_TEXT_BYTES,
    Case,
    CaseError,
    cases_folder,
    read_case,
    read_cases,
)

log = logging.getLogger(__name__)

# The recipe the built-in coding agent is: what a case in rysh's own layout runs on (`auto eval
# PATH`), in an empty working copy or one made from the case's files/. The case's task fills
# {{task}}; its `until:`, when set, is the goal instead of this one.
BUILT_IN_AGENT_PATH = ".rysh/automations/codes/eval-agent.md"
BUILT_IN_AGENT = """\
---
description: The built-in coding agent that runs a case in rysh's own layout (auto eval PATH).
args: [task]
workdir: "."
loop:
  do:
    max_iterations: 40
    max_duration: 15m
    budget:
      size: 1b
  while:
    max_iterations: 2
    max_duration: 30m
    budget: 2b
    prompts:
      until: >
        The task below is done as it asks, checked by running what the project has to check it,
        and the final answer says what changed: {{task}}
      iterate_with: >
        The task is not done yet. Your working copy still holds what you did: check it, finish
        the task, and answer with what changed.
---
You work in {{workdir}}, a working copy made for this task. Use the shell and the file tools:
read before you write, run the project's own checks (its tests, if it has any), and change only
what the task needs. When you are done, answer with a short summary of what you changed and
what the checks said.

## The task

{{task}}
"""

# --- (a) the recipes repository at a commit ---------------------------------------------------


def cases_at(git: GitRepo, sha: str, recipe_path: str) -> list[Case]:
    """The cases of the recipe at `recipe_path` as they are at commit `sha`: only the blobs under
    its evals/ folder are read (one `git cat-file --batch`)."""
    folder = cases_folder(recipe_path)
    listing = git.tree(sha, under=folder + "/")
    blobs = git.read_blobs(listing.values())
    return read_cases({path: blobs[blob] for path, blob in listing.items() if blob in blobs}, folder)


# --- (b) a folder on disk in rysh's package layout ---------------------------------------------


class NotACasesFolder(ValueError):
    """The path is none of: a package holding evals/, an evals/ folder, a case folder."""


def cases_on_disk(path: str | os.PathLike) -> list[Case]:
    """The cases of a folder in rysh's layout: a package folder (holding `evals/`), an `evals/`
    folder, or a single case folder (holding task.md or expect.yaml). Symbolic links are not
    followed (a case reads nothing outside its folder): each is an error of its case."""
    root = Path(path)
    if not root.is_dir():
        raise NotACasesFolder(f"{path}: no such folder")
    if (root / "evals").is_dir():
        return _evals_folder(root / "evals")
    if any((root / name).is_file() for name in ("task.md", "expect.yaml")):
        return [_case_folder(root, root.resolve().name or str(root))]
    if root.name == "evals" or any(_looks_like_case(child) for child in _subfolders(root)):
        return _evals_folder(root)
    raise NotACasesFolder(
        f"{path}: expected a package folder holding evals/, an evals/ folder, "
        "or a case folder holding task.md and expect.yaml"
    )


def _subfolders(folder: Path) -> list[Path]:
    return sorted(child for child in folder.iterdir() if child.is_dir() and not child.is_symlink())


def _looks_like_case(folder: Path) -> bool:
    return any((folder / name).is_file() for name in CASE_FILES)


def cases_beside(recipe_file: str | os.PathLike, *, root: str | os.PathLike | None = None) -> list[Case]:
    """The cases of a recipe file on disk (`codes/fix.md` -> `codes/fix/evals/*`), [] when it
    has none; named from `root` (the repository's root) when the folder is inside it."""
    folder = Path(cases_folder(os.fspath(recipe_file)))
    if not folder.is_dir() or folder.is_symlink():
        return []
    label = str(folder)
    if root is not None:
        try:
            label = folder.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass  # outside the repository: named as given
    return _evals_folder(folder, label=label)


def _evals_folder(folder: Path, *, label: str | None = None) -> list[Case]:
    cases = []
    prefix = label if label is not None else str(folder)
    for child in sorted(folder.iterdir()):
        if child.is_symlink():
            cases.append(_symlink_case(child, f"{prefix}/{child.name}"))
        elif child.is_dir():
            cases.append(_case_folder(child, child.name, label=f"{prefix}/{child.name}"))
    return cases


def _case_folder(folder: Path, name: str, *, label: str | None = None) -> Case:
    label = label if label is not None else str(folder)
    files, errors, size = {}, [], 0
    limit = MAX_FILES_BYTES + len(CASE_FILES) * MAX_TEXT_BYTES
    for file in _walk(folder, errors, label):
        relative = file.relative_to(folder).as_posix()
        try:
            size += file.stat().st_size
            if size > limit:
                errors.append(CaseError(label, 0, "", f"expected at most {limit:,} bytes in all: a case is small"))
                break
            files[relative] = file.read_bytes()
        except OSError as exc:
            errors.append(CaseError(f"{label}/{relative}", 0, "", f"cannot be read: {exc.strerror or exc}"))
    case = read_case(name, label, files)
    return dataclasses.replace(case, errors=(*errors, *case.errors)) if errors else case


def _walk(folder: Path, errors: list[CaseError], label: str):
    for base, dirs, names in os.walk(folder):
        here = Path(base)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                errors.append(_link_error(here / name, folder, label))
        dirs[:] = sorted(d for d in dirs if d != ".git" and not (here / d).is_symlink())
        for name in sorted(names):
            file = here / name
            if file.is_symlink():
                errors.append(_link_error(file, folder, label))
            elif file.is_file():
                yield file


def _link_error(link: Path, folder: Path, label: str) -> CaseError:
    where = f"{label}/{link.relative_to(folder).as_posix()}"
    return CaseError(where, 0, "", "a symbolic link: a case's files are read as files, never followed")


def _symlink_case(link: Path, label: str) -> Case:
    return Case(
        name=link.name,
        folder=label,
        errors=(CaseError(label, 0, "", "a symbolic link: a case is a folder, never followed"),),
    )


# --- (c) the recipe page ------------------------------------------------------------------------

_CACHE_SIZE = 32
_cache: OrderedDict[tuple[str, str, str], tuple[Case, ...]] = OrderedDict()
_cache_lock = threading.Lock()


def recipe_cases(recipe: Recipe) -> list[Case]:
    """The cases of a catalogue recipe for its page: as on the tracked branch at the commit the
    catalogue last synced (cases change without the recipe changing, and that makes no new
    version of it), else at the commit of its good (else latest) version. Read through the app's
    recipes repository, without fetching (a page never waits on the network); [] when the
    repository cannot be read (logged)."""
    version = recipe.good or recipe.latest
    location = settings.RYSH_RECIPES_REPO
    head = None
    if not recipe.archived:
        state = RepoState.objects.filter(repo=redact(location), branch=settings.RYSH_RECIPES_BRANCH).first()
        head = state.synced_sha if state is not None and state.synced_sha else None
    sha = head or (version.commit_sha if version is not None else None)
    path = recipe.path or (version.path if version is not None else "")
    if not sha or not path:
        return []
    key = (redact(location), sha, path)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return list(_cache[key])
    try:
        cases = tuple(cases_at(open_repo(location), sha, path))
    except (RepoError, ValueError) as exc:
        log.warning("the cases of %s at %s cannot be read: %s", path, sha[:12], exc)
        return []
    with _cache_lock:
        _cache[key] = cases
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return list(cases)


def recipe_cases_forget() -> None:
    """Empty the page's cache (tests; a commit's cases never change, so nothing else needs it)."""
    with _cache_lock:
        _cache.clear()


__all__ = [
    "BUILT_IN_AGENT",
    "BUILT_IN_AGENT_PATH",
    "FILES_DIR",
    "NotACasesFolder",
    "cases_at",
    "cases_beside",
    "cases_on_disk",
    "recipe_cases",
    "recipe_cases_forget",
]
