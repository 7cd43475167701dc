"""The recipe catalogue: the list, a recipe's page, the diff between two of its versions; the
repository page (admins) and the push hook forges call."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from audit.services import audit_record
from catalogue.hooks import KEEP, MAX_BODY, REFUSALS_KEPT_DAYS, git_push_receive
from catalogue.markdown import render_markdown
from catalogue.models import Recipe, RecipeVersion
from catalogue.repo import RepoError, redact
from catalogue.selectors import (
    git_deliveries_recent,
    git_hook_refusals_recent,
    recipe_catalogue,
    recipe_version_before,
    recipe_versions,
    repo_state_current,
)
from catalogue.spec import FOLDERS, Kind
from catalogue.sync import recipes_sync
from evals.views import recipe_evals_context
from policies.selectors import policed_version_plan
from reviews.selectors import change_requests_open_count, change_requests_open_for_recipe
from reviews.services import plan_delta, text_diff
from runs.chains import chain_quota_lines
from runs.selectors import recipe_runs_recent, recipes_with_last_run
from runs.workbench.labels import judge_agreement
from rysh_site.proxies import client_address
from rysh_site.roles import require, user_can
from schedules.models import RecipeSchedule
from schedules.services import recipe_schedule_name, schedule_owner


def _get_recipe_for_user(request: HttpRequest, kind: str, name: str, action: str = "view") -> Recipe:
    require(request.user, action)
    if kind not in FOLDERS:
        raise Http404("no such kind")
    return get_object_or_404(Recipe.objects.select_related("latest", "good"), kind=kind, name=name)


@login_required
@vary_on_headers("HX-Request")
def recipe_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    kind = request.GET.get("kind", "")
    q = request.GET.get("q", "").strip()
    context = {
        "recipes": list(recipes_with_last_run(recipe_catalogue(kind=kind, q=q))),
        "kind": kind,
        "kinds": list(Kind),
        "q": q,
        "repo": redact(settings.RYSH_RECIPES_REPO),
        "branch": settings.RYSH_RECIPES_BRANCH,
        "can_edit": user_can(request.user, "edit"),
        "can_sync": _can_sync(request.user),
        "can_admin": user_can(request.user, "admin"),
        "open_changes": change_requests_open_count(),
    }
    template = "catalogue/recipe_list/_rows.html" if request.htmx else "catalogue/recipe_list.html"
    return render(request, template, context)


def _can_sync(user) -> bool:
    """Operators, editors and admins: a sync is a control (operate), and editors need it to see
    what they pushed to git from outside; neither action alone covers both roles."""
    return user_can(user, "operate") or user_can(user, "edit")


@login_required
@require_POST
def recipes_sync_view(request: HttpRequest) -> HttpResponse:
    if not _can_sync(request.user):
        raise PermissionDenied("your role cannot sync")
    target = ("repo", "", redact(settings.RYSH_RECIPES_REPO))
    try:
        result = recipes_sync()
    except RepoError as exc:
        audit_record(actor=request.user, action="recipes.sync", target=target, detail={"error": str(exc)})
        messages.error(request, f"sync failed: {exc}")
    else:
        audit_record(
            actor=request.user,
            action="recipes.sync",
            target=target,
            detail={"head": result.head[:12], "changed": result.changed, "versions": result.versions},
        )
        messages.success(request, result.line())
    return redirect("recipe_list")


@csrf_exempt  # a forge holds no CSRF token: the body's signature is its credential (catalogue.hooks)
@require_POST
def git_hook(request: HttpRequest) -> HttpResponse:
    """The push hook, public: forges cannot log in. A body over MAX_BODY is not read at all."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = request.body if length <= MAX_BODY else None
    if body is not None and len(body) > MAX_BODY:
        body = None
    answer = git_push_receive(headers=request.headers, body=body, address=client_address(request))
    return JsonResponse(answer.body(), status=answer.status)


@login_required
def recipes_repository(request: HttpRequest) -> HttpResponse:
    """Admins: the repository, its last sync, and what the push hook received."""
    require(request.user, "admin")
    return render(
        request,
        "catalogue/recipes_repository.html",
        {
            "repo": redact(settings.RYSH_RECIPES_REPO),
            "branch": settings.RYSH_RECIPES_BRANCH,
            "state": repo_state_current(),
            "hook_on": bool(settings.RYSH_GIT_HOOK_SECRET),
            "hook_url": settings.RYSH_SITE_URL + reverse("git_hook"),
            "deliveries": git_deliveries_recent(),
            "refusals": git_hook_refusals_recent(),
            "keep": KEEP,
            "refusal_days": REFUSALS_KEPT_DAYS,
        },
    )


@login_required
def recipe_detail(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    recipe = _get_recipe_for_user(request, kind, name)
    shown = recipe.good or recipe.latest
    spec, lines = policed_version_plan(shown)  # as a run would start now: the policy's ceilings too
    return render(
        request,
        "catalogue/recipe_detail.html",
        {
            "recipe": recipe,
            "shown": shown,
            "spec": spec,
            "plan_lines": lines,
            # docs/chains.md: the recipes its success starts, their worst case, the quotas' say
            "chain_lines": chain_quota_lines(spec, user_id=request.user.pk) if spec else [],
            "prompt_html": render_markdown(spec.prompt) if spec else "",
            "versions": list(recipe_versions(recipe)),
            "runs": recipe_runs_recent(recipe),
            "agreement": judge_agreement(kind=kind, name=name),
            "changes": change_requests_open_for_recipe(kind=kind, name=name),
            "broken_newest": recipe.latest_id and recipe.latest_id != recipe.good_id,
            "can_edit": user_can(request.user, "edit") and not recipe.archived,
            "can_operate": user_can(request.user, "operate"),
            "schedule_owner": _schedule_owner(kind, name),
            "branch": settings.RYSH_RECIPES_BRANCH,  # where a coding loop's copy starts without base:
            **recipe_evals_context(request, recipe),  # its eval cases and their history (docs/evals.md)
        },
    )


def _schedule_owner(kind: str, name: str):
    """Whom the recipe's own schedule starts its runs for, as the page says it (None: no schedule)."""
    row = RecipeSchedule.objects.filter(name=recipe_schedule_name(kind, name)).select_related("owner").first()
    return schedule_owner(row) if row else None


@login_required
def recipe_diff(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    """Any two versions: `?a=<version id>&b=<version id>` (b defaults to the newest, a to the
    version before b)."""
    recipe = _get_recipe_for_user(request, kind, name)
    b = _version_or_404(recipe, request.GET.get("b") or recipe.latest_id)
    a_id = request.GET.get("a")
    a = _version_or_404(recipe, a_id) if a_id else recipe_version_before(b)
    before = a.text if a else ""
    return render(
        request,
        "catalogue/recipe_diff.html",
        {
            "recipe": recipe,
            "a": a,
            "b": b,
            "diff": text_diff(before, b.text),
            "delta": plan_delta(a.text if a else None, b.text, kind=kind, name=name),
            "versions": recipe_versions(recipe),
        },
    )


def _version_or_404(recipe: Recipe, pk: object) -> RecipeVersion:
    try:
        return recipe.versions.get(pk=int(pk))
    except (TypeError, ValueError, RecipeVersion.DoesNotExist):
        raise Http404("no such version of this recipe") from None
