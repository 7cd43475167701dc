"""/api/recipes: the catalogue (`auto <kind> check`'s answers, over HTTP). Scope: read."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema

from api.views.common import ApiError, acting, recipe_error
from budgets.prices import format_money
from catalogue.checks import stored_problem
from catalogue.models import Recipe
from catalogue.recipe import RecipeError, parse_recipe
from catalogue.selectors import recipe_catalogue
from catalogue.spec import FOLDERS, Kind
from runs.checks import check_report

router = Router(tags=["recipes"])
MAX_TEXT = 256 * 1024


class CheckIn(Schema):
    kind: Kind
    name: str = "recipe"
    text: str
    args: list[str] = []


class RecipeOut(Schema):
    kind: str
    name: str
    target: str
    path: str
    description: Any
    runnable: bool
    newest_broken: bool
    commit: str
    plan: dict[str, Any]


class RecipeListOut(Schema):
    recipes: list[RecipeOut]


class WorstCaseOut(Schema):
    tokens: int
    dollars: str | None
    text: str
    money_text: str
    models: list[str]


class ReportOut(Schema):
    """What `auto <kind> check` says (runs/checks.py); a field is left out when it does not apply."""

    errors: list[str] = []
    plan_lines: list[str] = []
    worst_case: WorstCaseOut | None = None
    quota_lines: list[str] = []
    model_notes: list[str] = []
    warnings: list[str] = []


class RecipeDetailOut(RecipeOut, ReportOut):
    args: list[str] = []


class CheckOut(ReportOut):
    ok: bool
    target: str


def _summary(recipe: Recipe) -> dict:
    shown = recipe.good or recipe.latest
    plan = shown.plan if shown else {}
    return {
        "kind": recipe.kind,
        "name": recipe.name,
        "target": recipe.target,
        "path": recipe.path,
        "description": (shown.spec or {}).get("description", "") if shown else "",
        # valid at sync, and still now for what the database decides (a server removed since)
        "runnable": recipe.good_id is not None and stored_problem(recipe.good.spec) is None,
        "newest_broken": bool(recipe.latest_id and recipe.latest_id != recipe.good_id),
        "commit": shown.commit_sha if shown else "",
        "plan": plan,
    }


@router.get("/recipes", response=RecipeListOut)
def recipe_list(request: HttpRequest, kind: Kind | None = None, q: str = ""):
    """Every active recipe, with the plan figures computed at sync. Scope: read."""
    with acting(request, "read"):
        return recipe_list_of(kind=kind or "", q=q)


def recipe_list_of(*, kind: str = "", q: str = "") -> dict:
    """The catalogue's active recipes (kind and a search narrow it), as /api/recipes answers."""
    return {"recipes": [_summary(r) for r in recipe_catalogue(kind=kind, q=q)]}


@router.get("/recipes/{kind}/{name}", response=RecipeDetailOut, exclude_unset=True)
def recipe_show(request: HttpRequest, kind: Kind, name: str):
    """One recipe: its plan lines, its worst case, the quota lines for a run started by the
    token's owner, its models and warnings; a broken newest version's errors. Scope: read."""
    with acting(request, "read") as owner:
        return recipe_detail(kind=kind, name=name, owner=owner)


def recipe_detail(*, kind: str, name: str, owner) -> dict:
    """One recipe with its plan lines, worst case and `owner`'s quota lines (Http404 if none)."""
    recipe = get_object_or_404(Recipe.objects.select_related("good", "latest"), kind=kind, name=name, archived=False)
    shown = {**_summary(recipe), "errors": list(recipe.latest.errors) if recipe.latest else []}
    if recipe.good is None:
        return shown
    try:
        spec = parse_recipe(recipe.good.text, path=recipe.good.path, kind=kind)
    except RecipeError as exc:  # valid at sync, not now (a check that reads the database)
        return {**shown, "errors": [str(i) for i in exc.issues]}
    report = _report(spec, [], owner.pk)
    report.pop("issues", None)
    return {**shown, "args": list(spec.args), **report}


@router.post("/recipes/check", response=CheckOut, exclude_unset=True)
def recipe_check(request: HttpRequest, payload: CheckIn):
    """A recipe text, checked as `auto <kind> check` checks a file: 200 with its plan, worst
    case, quota lines and warnings, or 400 with each error as `file:line field: expected …,
    got …`. Changes nothing. Scope: read."""
    with acting(request, "read") as owner:
        if len(payload.text.encode()) > MAX_TEXT:
            raise ApiError(400, f"text: at most {MAX_TEXT} bytes", field="text")
        path = f".rysh/automations/{FOLDERS[payload.kind]}/{payload.name}.md"
        try:
            spec = parse_recipe(payload.text, path=path, kind=payload.kind, name=payload.name)
        except RecipeError as exc:
            raise recipe_error(exc) from None
        report = _report(spec, payload.args, owner.pk)
        if report["errors"]:
            raise recipe_error(RecipeError(report["issues"]))
        return {"ok": True, "target": spec.target, **report}


def _report(spec, args: list[str], user_id: int) -> dict:
    report = check_report(spec, recipe_args=args, user_id=user_id)
    if report.errors:  # what needs the database or the models list
        return {"errors": [str(i) for i in report.errors], "issues": report.errors}
    worst = report.worst
    return {
        "errors": [],
        "plan_lines": report.plan_lines,
        "worst_case": {
            "tokens": worst.tokens,
            "dollars": str(worst.money) if worst.money is not None else None,
            "text": worst.text(),
            "money_text": format_money(worst.money),
            "models": list(worst.models),
        },
        "quota_lines": report.quota_lines,
        "model_notes": report.model_lines,
        "warnings": report.warnings,
    }
