"""Reads: the channels a recipe's `notify:` names, the rules of what an event is about."""

from __future__ import annotations

import dataclasses
import logging
import os

from catalogue.models import Recipe
from catalogue.recipe import RecipeError, RecipeIssue, parse_recipe
from catalogue.spec import RecipeSpec
from notify.models import Channel, Delivery

log = logging.getLogger(__name__)


def unknown_channels(spec: RecipeSpec) -> list[RecipeIssue]:
    """A recipe error for each `notify:` entry whose channel is not configured (registered
    with catalogue.checks, so sync, `auto check` and the editor report it)."""
    if not spec.notify:
        return []
    names = sorted(Channel.objects.values_list("name", flat=True))
    label = os.path.basename(spec.path) or spec.path
    known = ", ".join(names) if names else "none yet: an admin adds them on the Notifications page"
    return [
        RecipeIssue(
            label, rule.line, "notify.channel", f"expected a configured channel ({known}), got {rule.channel!r}"
        )
        for rule in spec.notify
        if rule.channel not in names
    ]


def run_rules(run) -> list[dict]:
    """The `notify:` entries of the recipe a run was armed with."""
    if run.recipe_version_id and run.recipe_version.spec:
        return list(run.recipe_version.spec.get("notify") or [])
    try:
        spec = parse_recipe(run.recipe_text, path=run.recipe_path or f"{run.name}.md", kind=run.kind, name=run.name)
    except RecipeError:
        return []
    return [dataclasses.asdict(rule) for rule in spec.notify]


def recipe_rules(kind: str, name: str) -> list[dict]:
    """The `notify:` entries of a recipe's good version in the catalogue."""
    recipe = Recipe.objects.filter(kind=kind, name=name).select_related("good").first()
    if recipe is None or recipe.good is None:
        return []
    return list((recipe.good.spec or {}).get("notify") or [])


def deliveries_page(*, state: str = "", limit: int = 200):
    rows = Delivery.objects.select_related("channel").prefetch_related("attempt_rows")
    if state:
        rows = rows.filter(state=state)
    return rows[:limit]
