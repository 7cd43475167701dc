"""`on_success` chains against the catalogue (docs/chains.md): the graph of the synced recipes,
the check `auto check`, the recipe page, the editor and the start of a run make (a recipe named
that is not in the catalogue, a cycle, a chain deeper than 8), sync's own pass of it over the
recipes as the head has them, and the chain's worst case summed over its recipes.

The walk itself is pure (catalogue.chains); this module only reads the database."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePath

from django.db import DatabaseError

from budgets.plan import Plan, resolve
from budgets.prices import format_money
from budgets.units import format_tokens
from catalogue.chains import Chain, ChainCost, LinkCost, chain_problems, walk
from catalogue.models import Recipe
from catalogue.plan_report import models_for, worst_case_money, wrapup_for
from catalogue.recipe import RecipeError, RecipeIssue, parse_recipe
from catalogue.spec import RecipeSpec

# what a run's start does to a plan before it is armed (None: nothing)
PlanShape = Callable[[Plan], Plan] | None

# sync checks chains once the whole head is read (chains_recheck), not version by version
_SYNCING: contextvars.ContextVar[bool] = contextvars.ContextVar("chains_syncing", default=False)


def catalogue_graph() -> dict[str, str | None]:
    """Every recipe of the catalogue that can run (its last valid version) -> the target its
    `on_success` names, or None."""
    rows = Recipe.objects.filter(archived=False, good__isnull=False).values_list("kind", "name", "good__spec")
    return {f"{kind}/{name}": (spec or {}).get("on_success") for kind, name, spec in rows}


def chain_for(spec: RecipeSpec, graph: dict[str, str | None] | None = None) -> Chain:
    """The chain of `spec` as written (it may differ from the catalogue's version of it)."""
    graph = dict(catalogue_graph() if graph is None else graph)
    graph[spec.target] = spec.on_success
    return walk(spec.target, graph)


def chain_issues(spec: RecipeSpec) -> list[RecipeIssue]:
    """The recipe's chain as a check sees it: its errors at the `on_success` line."""
    if spec.on_success is None or _SYNCING.get():
        return []
    try:
        chain = chain_for(spec)
    except DatabaseError:  # `auto check` of a file on a checkout whose database is not set up
        return []
    return _issues(spec.path, spec.on_success_line, chain)


def _issues(path: str, line: int | None, chain: Chain) -> list[RecipeIssue]:
    return [RecipeIssue(PurePath(path).name, line, "on_success", problem) for problem in chain_problems(chain)]


@contextlib.contextmanager
def chains_deferred() -> Iterator[None]:
    """While sync reads versions one by one: the recipes they name may come later in the same
    sync, so their chains are checked by chains_recheck once all are read."""
    token = _SYNCING.set(True)
    try:
        yield
    finally:
        _SYNCING.reset(token)


def chains_recheck(entries: Iterable) -> None:
    """Sync's pass over what it read (catalogue.sync's entries: kind, name, exists, versions):
    the chains of its valid versions walked over the catalogue as the head will have it; a
    version whose chain is wrong becomes invalid with the errors at its `on_success` line."""
    entries = list(entries)
    graph = catalogue_graph()
    for entry in entries:
        target = f"{entry.kind}/{entry.name}"
        valid = [v for v in entry.versions if v.valid]
        if not entry.exists:
            graph.pop(target, None)
        elif valid:  # else its last good version, older, stays the one that runs
            graph[target] = valid[-1].spec.get("on_success")
    for entry in entries:
        for version in entry.versions:
            on_success = version.spec.get("on_success") if version.valid else None
            if on_success is None:
                continue
            chain = walk(f"{entry.kind}/{entry.name}", {**graph, f"{entry.kind}/{entry.name}": on_success})
            if problems := _issues(version.path, version.spec.get("on_success_line"), chain):
                version.valid, version.errors = False, [str(issue) for issue in problems]
                version.spec, version.plan = {}, {}


# -- the chain's worst case --------------------------------------------------------------------------


def link_cost(target: str, spec: RecipeSpec | None = None, *, shape: PlanShape = None) -> LinkCost | None:
    """A recipe's worst case as a link of a chain (`spec`: as given; else the catalogue's last
    valid version), or None when the catalogue does not hold it. `shape`: what a run's start
    does to the plan before it is armed (the team's policy ceilings, docs/policy.md)."""
    if spec is None:
        spec = good_spec(target)
        if spec is None:
            return None
    plan = resolve(spec.do, spec.loop_while)
    if shape is not None:
        plan = shape(plan)
    executor, judge = models_for(spec)
    money = worst_case_money(plan, executor=executor, judge=judge, wrapup=wrapup_for(spec, executor))
    return LinkCost(target, plan.worst_tokens, money)


def good_spec(target: str) -> RecipeSpec | None:
    kind, _, name = target.partition("/")
    recipe = Recipe.objects.filter(kind=kind, name=name, archived=False).select_related("good").first()
    if recipe is None or recipe.good is None:
        return None
    try:
        return parse_recipe(recipe.good.text, path=recipe.good.path, kind=kind, name=name)
    except RecipeError:
        return None


def chain_cost(spec: RecipeSpec, chain: Chain, *, shape: PlanShape = None) -> ChainCost:
    """The worst case of every recipe of the chain a run of `spec` may start, the first as given."""
    links = [link_cost(spec.target, spec, shape=shape)]
    links += [link_cost(target, shape=shape) for target in chain.links[1:]]
    return ChainCost(tuple(link for link in links if link is not None))


def chain_lines(spec: RecipeSpec, *, shape: PlanShape = None) -> list[str]:
    """What `auto check`, a dry run and the recipe page say of a recipe's chain (nothing when it
    names none): the chain as one line, then its worst case summed over its recipes."""
    if spec.on_success is None:
        return []
    try:
        chain = chain_for(spec)
        cost = chain_cost(spec, chain, shape=shape)
    except DatabaseError:
        return ["chain:   unknown: the database is not migrated (python manage.py migrate)"]
    each = " + ".join(f"{link.target} {format_tokens(link.tokens)}" for link in cost.links)
    return [
        f"chain:   {chain.text}",
        f"chain worst case: {cost.tokens} tokens ({format_tokens(cost.tokens)}) over {len(cost.links)} "
        f"recipes ({each}), at most {format_money(cost.money)}",
    ]
