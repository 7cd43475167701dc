"""Reads: the channels a recipe's `notify:` names, the rules of what an event is about."""

from __future__ import annotations

import dataclasses
import logging
import os

from catalogue.models import Recipe
from catalogue.recipe import RecipeError, RecipeIssue, parse_recipe
from catalogue.spec import RecipeSpec
from notify.models import TAKES_TO, Channel, Delivery
from notify.services import ChannelError, check_recipients

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


def unsendable_to(spec: RecipeSpec) -> list[RecipeIssue]:
    """A recipe error for each `notify:` `to:` its channel cannot take: a channel whose kind
    has no recipients of its own (a webhook, Slack), or addresses the kind refuses."""
    label = os.path.basename(spec.path) or spec.path
    kinds = dict(Channel.objects.filter(name__in=[r.channel for r in spec.notify if r.to]).values_list("name", "kind"))
    issues = []
    for rule in spec.notify:
        kind = kinds.get(rule.channel)
        if rule.to is None or kind is None:  # no to:, or no such channel (unknown_channels says so)
            continue
        if kind not in TAKES_TO:
            takes = ", ".join(TAKES_TO)
            issues.append(
                RecipeIssue(
                    label,
                    rule.to_line,
                    "notify.to",
                    f"channel {rule.channel!r} is a {kind} channel, which sends to its own address: "
                    f"to: applies to {takes} channels only; remove to: or name such a channel",
                )
            )
            continue
        try:
            check_recipients(rule.to)
        except ChannelError as exc:
            issues.append(RecipeIssue(label, rule.to_line, "notify.to", f"expected email addresses: {exc}"))
    return issues


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
