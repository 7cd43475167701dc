from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from automations.workdir import list_recipes
from budgets.plan import resolve
from budgets.prices import counted_ceiling_cost, format_money
from budgets.units import format_tokens


@login_required
def recipe_list(request):
    kind = request.GET.get("kind", "")
    text = request.GET.get("q", "").strip().lower()
    rows = [_row(f) for f in list_recipes(settings.RYSH_RECIPES_REPO)]
    if kind in ("web", "task"):
        rows = [r for r in rows if r["kind"] == kind]
    if text:
        rows = [r for r in rows if text in r["name"].lower() or text in r["description"].lower()]
    context = {"rows": rows, "kind": kind, "q": request.GET.get("q", ""),
               "repo": settings.RYSH_RECIPES_REPO}
    template = "automations/_recipe_rows.html" if request.htmx else "automations/recipe_list.html"
    return render(request, template, context)


def _row(recipe_file) -> dict:
    row = {"kind": recipe_file.kind, "name": recipe_file.name, "description": "",
           "schedule": "", "error": recipe_file.error}
    spec = recipe_file.spec
    if spec is not None:
        plan = resolve(spec.do, spec.loop_while)
        model = spec.executor_model or settings.RYSH_EXECUTOR_MODEL
        row.update(
            description=spec.description, schedule=spec.schedule or "",
            worst_tokens=plan.worst_tokens, worst_display=format_tokens(plan.worst_tokens),
            worst_money=format_money(counted_ceiling_cost(model, plan.worst_tokens)),
            passes=plan.passes,
        )
    return row
