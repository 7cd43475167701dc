"""A suite's cases read again: as they were at the suite's commit (grading its runs), or as they
are now (`--result`: the current expect.yaml and judge.md)."""

from __future__ import annotations

from django.conf import settings

from catalogue.repo import open_repo, reopen_location
from evals.format import Case
from evals.models import Suite, SuiteSide
from evals.planning import Read, cases_at, change_recipe_path, read_path, read_target


def suite_read(suite: Suite, *, now: bool = False) -> Read:
    """The recipe and cases of `suite`: at its commit, or (`now`) at the head it was read from."""
    if suite.side == SuiteSide.PATH:
        return read_path(suite.target)
    change = suite.change_request
    if now:
        return read_target(_target(suite), side=suite.side, change=change)
    if suite.side == SuiteSide.CHANGE and change is not None:
        git = open_repo(reopen_location(change.repo, settings.RYSH_RECIPES_REPO))
        path = change_recipe_path(change)
    else:
        git = open_repo(settings.RYSH_RECIPES_REPO)
        path = suite.recipe.path if suite.recipe else ""
    kind = _target(suite).partition("/")[0]
    return Read(
        kind=kind,
        path=path,
        text=suite.recipe_text,
        commit_sha=suite.commit_sha,
        cases=cases_at(git, suite.commit_sha, path) if path else [],
        recipe=suite.recipe,
    )


def _target(suite: Suite) -> str:
    return suite.recipe.target if suite.recipe else suite.target


def case_of(suite: Suite, name: str, *, now: bool = False) -> Case | None:
    return next((c for c in suite_read(suite, now=now).cases if c.name == name), None)
