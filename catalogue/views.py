"""The recipe catalogue: the list, a recipe's page, the diff between two of its versions."""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import OuterRef, Q, Subquery
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from catalogue.markdown import render_markdown
from reviews.models import ChangeRequest
from catalogue.models import Recipe, RecipeVersion
from runs.models import Run
from reviews.models import OPEN_STATES
from catalogue.plan_report import plan_lines
from catalogue.recipe import RecipeError, parse_recipe
from catalogue.repo import RepoError
from reviews.services import plan_delta, text_diff
from rysh_site.roles import require, user_can
from catalogue.sync import recipes_sync
from budgets.plan import resolve

KINDS = ("web", "task")


def _get_recipe_for_user(request, kind: str, name: str, action: str = "view") -> Recipe:
    require(request.user, action)
    if kind not in KINDS:
        raise Http404("no such kind")
    return get_object_or_404(Recipe.objects.select_related("latest", "good"), kind=kind, name=name)


@login_required
def recipe_list(request):
    require(request.user, "view")
    kind = request.GET.get("kind", "")
    q = request.GET.get("q", "").strip()
    recipes = _catalogue()
    if kind in KINDS:
        recipes = recipes.filter(kind=kind)
    if q:
        recipes = recipes.filter(Q(name__icontains=q) | Q(good__spec__description__icontains=q)
                                 | Q(latest__spec__description__icontains=q))
    context = {"recipes": list(recipes), "kind": kind, "q": q, "repo": settings.RYSH_RECIPES_REPO,
               "branch": settings.RYSH_RECIPES_BRANCH, "can_edit": user_can(request.user, "edit"),
               "open_changes": ChangeRequest.objects.filter(state__in=OPEN_STATES).count()}
    template = "catalogue/_recipe_rows.html" if request.htmx else "catalogue/recipe_list.html"
    return render(request, template, context)


def _catalogue():
    """Every active recipe with what the list shows, in a constant number of queries: the
    versions' texts stay in the database, the plan numbers were computed at sync."""
    last_run = Run.objects.filter(recipe=OuterRef("pk")).order_by("-created_at", "-id")
    return (Recipe.objects.filter(archived=False)
            .select_related("latest", "good")
            .defer("latest__text", "good__text", "latest__message", "good__message")
            .annotate(last_run_id=Subquery(last_run.values("id")[:1]),
                      last_run_state=Subquery(last_run.values("state")[:1]),
                      last_run_pause=Subquery(last_run.values("pause_reason")[:1]),
                      last_run_cause=Subquery(last_run.values("cause")[:1]))
            .order_by("kind", "name"))


@login_required
@require_POST
def recipes_sync_view(request):
    require(request.user, "view")
    try:
        result = recipes_sync()
    except RepoError as exc:
        messages.error(request, f"sync failed: {exc}")
    else:
        messages.success(request, result.line())
    return redirect("recipe_list")


@login_required
def recipe_detail(request, kind: str, name: str):
    recipe = _get_recipe_for_user(request, kind, name)
    shown = recipe.good or recipe.latest
    spec, lines = _spec_and_plan(shown)
    versions = list(recipe.versions.defer("text", "spec").order_by("-id"))
    runs = list(Run.objects.filter(recipe=recipe).only(
        "id", "state", "pause_reason", "phase", "cause", "pass_number", "tokens_counted", "cost",
        "created_at", "ended_at").order_by("-created_at", "-id")[:20])
    changes = ChangeRequest.objects.filter(kind=kind, state__in=OPEN_STATES).filter(
        Q(name=name) | Q(new_name=name)).select_related("author")
    return render(request, "catalogue/recipe_detail.html", {
        "recipe": recipe, "shown": shown, "spec": spec, "plan_lines": lines,
        "prompt_html": render_markdown(spec.prompt) if spec else "",
        "versions": versions, "runs": runs, "changes": changes,
        "broken_newest": recipe.latest_id and recipe.latest_id != recipe.good_id,
        "can_edit": user_can(request.user, "edit") and not recipe.archived,
        "can_operate": user_can(request.user, "operate"),
    })


def _spec_and_plan(version: RecipeVersion | None):
    if version is None or not version.valid:
        return None, []
    try:
        spec = parse_recipe(version.text, path=version.path)
    except RecipeError:
        return None, []
    plan = resolve(spec.do, spec.loop_while)
    executor = spec.executor_model or settings.RYSH_EXECUTOR_MODEL
    judge = spec.judge or settings.RYSH_JUDGE_MODEL
    return spec, plan_lines(spec, plan, executor=executor, judge=judge)


@login_required
def recipe_diff(request, kind: str, name: str):
    """Any two versions: `?a=<version id>&b=<version id>` (b defaults to the newest, a to the
    version before b)."""
    recipe = _get_recipe_for_user(request, kind, name)
    versions = recipe.versions.all()
    b = _version_or_404(versions, request.GET.get("b") or recipe.latest_id)
    a_id = request.GET.get("a")
    a = (_version_or_404(versions, a_id) if a_id
         else versions.filter(id__lt=b.id).order_by("-id").first())
    before = a.text if a else ""
    return render(request, "catalogue/recipe_diff.html", {
        "recipe": recipe, "a": a, "b": b,
        "diff": text_diff(before, b.text),
        "delta": plan_delta(a.text if a else None, b.text, kind=kind, name=name),
        "versions": versions.defer("text", "spec").order_by("-id"),
    })


def _version_or_404(versions, pk) -> RecipeVersion:
    try:
        return versions.get(pk=int(pk))
    except (TypeError, ValueError, RecipeVersion.DoesNotExist):
        raise Http404("no such version of this recipe") from None
