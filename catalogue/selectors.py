"""The read side of the catalogue (HackSoft selectors): the recipe list, a recipe's versions
and plan (a recipe's runs are runs.selectors'). Nothing here writes; the pages call these, sync and the editor write."""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q, QuerySet

from budgets.lineup import tokenizer_note
from budgets.plan import resolve
from catalogue.models import GitDelivery, GitHookRefusal, Recipe, RecipeVersion, RepoState
from catalogue.plan_report import models_for, plan_lines
from catalogue.recipe import RecipeError, parse_recipe
from catalogue.repo import redact
from catalogue.spec import FOLDERS, KINDS, RecipeSpec


def recipe_catalogue(*, kind: str = "", q: str = "") -> QuerySet[Recipe]:
    """Every active recipe with what the list shows, in a constant number of queries: the
    versions' texts stay in the database, the plan numbers were computed at sync (the page adds
    each one's last run: runs.selectors.recipes_with_last_run)."""
    recipes = (
        Recipe.objects.filter(archived=False)
        .select_related("latest", "good")
        .defer("latest__text", "good__text", "latest__message", "good__message")
        .order_by("kind", "name")
    )
    if kind in FOLDERS:
        recipes = recipes.filter(kind=kind)
    if q:
        recipes = recipes.filter(
            Q(name__icontains=q) | Q(good__spec__description__icontains=q) | Q(latest__spec__description__icontains=q)
        )
    return recipes


def recipe_versions(recipe: Recipe) -> QuerySet[RecipeVersion]:
    """Newest first, without the texts (a list of versions never shows them)."""
    return recipe.versions.defer("text", "spec").order_by("-id")


def recipe_version_before(version: RecipeVersion) -> RecipeVersion | None:
    """The version of the same recipe just before this one (None: this one created it)."""
    return RecipeVersion.objects.filter(recipe_id=version.recipe_id, id__lt=version.id).order_by("-id").first()


def recipe_version_plan(version: RecipeVersion | None) -> tuple[RecipeSpec | None, list[str]]:
    """A version's spec and its resolved plan as text; (None, []) for one that does not parse."""
    if version is None or not version.valid:
        return None, []
    try:
        spec = parse_recipe(version.text, path=version.path)
    except RecipeError:
        return None, []
    plan = resolve(spec.do, spec.loop_while)
    executor, judge = models_for(spec)
    return spec, plan_lines(spec, plan, executor=executor, judge=judge)


def recipe_args(recipe: Recipe) -> list[str]:
    """The arguments the running (last good) version asks for, in order."""
    if recipe.good is None:
        return []
    try:
        return list(parse_recipe(recipe.good.text, path=recipe.good.path, kind=recipe.kind).args)
    except RecipeError:
        return []


def results_folder_owner(*, kind: str, name: str, output_dir: str) -> Recipe | None:
    """The recipe that already owns a custom results folder (one outside webs/, tasks/ and codes/) this
    recipe's `output_dir` equals, sits in or holds: None when the folder is free or its own.

    A folder belongs to the first recipe that claimed it (the older catalogue entry), so a later
    recipe cannot read or overwrite another's results by naming the same folder. Folders under
    webs/<name>/, tasks/<name>/ and codes/<name>/ are confined by the recipe reader already.
    """
    mine = _folder_parts(output_dir)
    if not mine or mine[0] in KINDS:
        return None
    me = Recipe.objects.filter(kind=kind, name=name, archived=False).values_list("pk", flat=True).first()
    others = Recipe.objects.filter(archived=False, good__isnull=False).exclude(kind=kind, name=name)
    if me is not None:
        others = others.filter(pk__lt=me)
    for other in others.select_related("good").defer("good__text", "good__message").order_by("pk"):
        theirs = _folder_parts((other.good.spec or {}).get("output_dir") or "")
        if theirs and (mine[: len(theirs)] == theirs or theirs[: len(mine)] == mine):
            return other
    return None


def _folder_parts(relative: str) -> list[str]:
    """A root-relative folder as comparable parts (results may sit on a case-insensitive disk)."""
    return [part.casefold() for part in relative.replace("\\", "/").split("/") if part and part != "."]


def tokenizer_notes(spec: RecipeSpec, *, executor: str, judge: str) -> list[str]:
    """`auto check` of a recipe whose models (as resolved now) are of another generation than
    the ones the version that runs now was priced on: the same work counts about 30% more
    tokens (or fewer). Nothing when the catalogue has no good version of it or cannot be read."""
    try:
        recipe = Recipe.objects.select_related("good").filter(kind=spec.kind, name=spec.name).first()
    except DatabaseError:  # a checkout whose database is not migrated yet
        return []
    if recipe is None or recipe.good is None:
        return []
    plan = recipe.good.plan or {}
    pairs = dict.fromkeys([(plan.get("executor"), executor), (plan.get("judge"), judge)])
    return [note for before, after in pairs if (note := tokenizer_note(before, after))]


def recipe_targets() -> list[str]:
    return [r.target for r in Recipe.objects.filter(archived=False).order_by("kind", "name")]


def repo_state_current() -> RepoState | None:
    """What the last sync of the configured repository and branch read (None: never synced)."""
    return RepoState.objects.filter(
        repo=redact(settings.RYSH_RECIPES_REPO), branch=settings.RYSH_RECIPES_BRANCH
    ).first()


def git_deliveries_recent(*, limit: int = 100) -> list[GitDelivery]:
    """The push hook's newest deliveries, newest first."""
    return list(GitDelivery.objects.order_by("-id")[:limit])


def git_hook_refusals_recent(*, limit: int = 100) -> list[GitHookRefusal]:
    """What the push hook refused without storing it, counted per day and reason, newest first."""
    return list(GitHookRefusal.objects.order_by("-day", "-last_at")[:limit])
