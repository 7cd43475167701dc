"""Evals' pages: the Evals panel of a change request (and its Run button), the recipe page's
cases and history, and the case editor whose saves are change requests (docs/evals.md)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from budgets.units import format_tokens
from catalogue.models import Recipe
from catalogue.recipe import NAME_RE
from catalogue.repo import RepoError, open_repo
from catalogue.spec import FOLDERS
from evals import services
from evals.compare import chart_points
from evals.format import cases_folder, parse_expect, parse_rubric, parse_task
from evals.selectors import (
    change_has_cases,
    change_is_case_edit,
    recipe_case_history,
    recipe_suite_rates,
    suite_comparison,
)
from evals.sources import recipe_cases
from reviews.models import ChangeRequest
from reviews.services import (
    ReviewError,
    change_merge_blockers,
    change_request_open_files,
    change_request_repo,
    change_request_update,
    normalize_text,
    text_diff,
)
from rysh_site.roles import require, user_can

PANEL = "evals/_panel.html"
CASE_FILES = ("task.md", "expect.yaml", "judge.md")
STARTER_TASK = """---
# until: the goal the judge checks, when this case has its own (else the recipe's)
# args: {placeholder: value}  the recipe's placeholders, when it has any
---
Describe the task this case gives the recipe.
"""
STARTER_EXPECT = """# rysh's assertions (docs/evals.md): every one optional
files_changed: ["**"]       # globs: the files the run may change
commands_forbidden: ["git push*"]
output_matches: []          # regexes over the final answer and the result files
max_tokens: 200000
"""


# --- the Evals panel of a change request --------------------------------------------------------


def change_evals_context(request: HttpRequest, change: ChangeRequest) -> dict:
    """What the change page and the panel's fragment show; {} when the change has no cases."""
    comparison, suites = suite_comparison(change)
    if not change_has_cases(change) and not any(suites.values()):
        return {}
    can_run = user_can(request.user, "edit") and change.is_open
    context = {
        "evals": True,
        "change": change,
        "comparison": comparison,
        "suites": suites,
        "can_run_evals": can_run,
        "stale_suite": suites["change"] is not None and suites["change"].commit_sha != change.head_sha,
        "case_edit": change_is_case_edit(change),
    }
    if can_run and not comparison.running:
        context.update(_plans(change))
    return context


def _plans(change: ChangeRequest) -> dict:
    """The suites' worst cases, shown before the button spends anything."""
    plans, refused = {}, ""
    for side in ("main", "change"):
        try:
            plans[side] = services.suite_plan(target=change.target, side=side, change=change)
        except services.SuiteRefused as exc:
            refused = f"{side}: {exc}"
    worst = sum(p.budget_tokens for p in plans.values())
    moneys = [getattr(p, "money", None) for p in plans.values()]
    return {
        "plans": plans,
        "plan_refused": refused,
        "plans_worst": format_tokens(worst) if plans else "",
        "plans_money": sum(moneys) if plans and all(m is not None for m in moneys) else None,
    }


def case_file_diffs(change: ChangeRequest) -> list[tuple[str, list]]:
    """Every file the change's branch changed (a new case writes two): its path and its diff."""
    git = change_request_repo(change)
    rows = []
    for item in git.changes(change.base_sha, change.head_sha):
        before = git.read_file(change.base_sha, item.path) or ""
        after = git.read_file(change.head_sha, item.path) or ""
        rows.append((item.path, text_diff(before, after)))
    return rows


def _get_change(request: HttpRequest, pk: int) -> ChangeRequest:
    require(request.user, "view")
    return get_object_or_404(ChangeRequest, pk=pk)


@login_required
def change_evals(request: HttpRequest, pk: int) -> HttpResponse:
    """The panel alone: what htmx polls while its suites run."""
    change = _get_change(request, pk)
    context = change_evals_context(request, change)
    if not context:
        raise Http404("this change touches no recipe with eval cases")
    return render(request, PANEL, context)


@login_required
@require_POST
def change_evals_run(request: HttpRequest, pk: int) -> HttpResponse:
    """Run the cases on main and on the change: money is spent, so editors and admins only."""
    change = _get_change(request, pk)
    require(request.user, "edit")
    if not change.is_open:
        messages.error(request, f"This change request is {change.state}: its evals no longer run.")
    else:
        try:
            main, mine = services.change_suites_start(change=change, user=request.user)
        except services.SuiteRefused as exc:
            messages.error(request, f"The evals did not start: {exc}")
        else:
            messages.success(request, f"Evals started: suite #{main.pk} on main and #{mine.pk} on the change.")
    return redirect(reverse("change_detail", args=[change.pk]) + "#evals")


# --- the recipe page's cases -------------------------------------------------------------------


def recipe_evals_context(request: HttpRequest, recipe: Recipe) -> dict:
    cases = recipe_cases(recipe)  # as the catalogue last synced them
    history = recipe_case_history(recipe.target)
    rows = []
    for case in cases:
        mine = history.get(case.name)
        rows.append({"case": case, "history": mine, "points": chart_points(mine.rates) if mine else ""})
    rates = recipe_suite_rates(recipe.target)
    return {
        "eval_cases": rows,
        "eval_gone": sorted(set(history) - {c.name for c in cases}),  # results of cases deleted since
        "eval_rates_points": chart_points([r for _, r in rates], width=240, height=40),
        "eval_rates": rates,
        "can_edit_cases": user_can(request.user, "edit") and not recipe.archived,
    }


# --- editing cases: each save a change request -----------------------------------------------


def _recipe_for_edit(request: HttpRequest, kind: str, name: str) -> Recipe:
    require(request.user, "edit")
    if kind not in FOLDERS:
        raise Http404("no such kind")
    recipe = get_object_or_404(Recipe, kind=kind, name=name)
    if recipe.archived:
        raise Http404("this recipe was deleted")
    return recipe


@login_required
def case_edit(request: HttpRequest, kind: str, name: str, case: str, filename: str) -> HttpResponse:
    recipe = _recipe_for_edit(request, kind, name)
    if filename not in CASE_FILES or not NAME_RE.match(case):
        raise Http404("no such case file")
    path = f"{cases_folder(recipe.path)}/{case}/{filename}"
    git = open_repo(settings.RYSH_RECIPES_REPO)
    current = git.read_file(git.head(settings.RYSH_RECIPES_BRANCH), path)
    if current is None and filename != "judge.md":
        raise Http404("no such case file")
    text, message, error = current or "", "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_broken({path: text})
            change = change_request_open_files(
                user=request.user,
                kind=kind,
                name=name,
                path=path,
                files={path: text},
                message=message or f"Edit the eval case {case} of {recipe.target}: {filename}",
            )
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Proposed as change request #{change.pk}; someone else reviews and merges it.")
            return redirect("change_detail", pk=change.pk)
    return _editor(
        request, recipe=recipe, case=case, filename=filename, path=path, text=text, message=message, error=error
    )


@login_required
def case_new(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    recipe = _recipe_for_edit(request, kind, name)
    case = request.POST.get("case", "").strip()
    task = request.POST.get("task", STARTER_TASK)
    expect = request.POST.get("expect", STARTER_EXPECT)
    message, error = request.POST.get("message", ""), ""
    if request.method == "POST":
        folder = f"{cases_folder(recipe.path)}/{case}"
        try:
            if not NAME_RE.match(case):
                raise ReviewError(f"{case!r} is not a case name: use lowercase letters, digits, '.', '_' or '-'")
            _refuse_broken({f"{folder}/task.md": task, f"{folder}/expect.yaml": expect})
            change = change_request_open_files(
                user=request.user,
                kind=kind,
                name=name,
                path=f"{folder}/task.md",
                files={f"{folder}/task.md": task, f"{folder}/expect.yaml": expect},
                message=message or f"New eval case {case} of {recipe.target}",
            )
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Proposed as change request #{change.pk}.")
            return redirect("change_detail", pk=change.pk)
    return render(
        request,
        "evals/case_new.html",
        {"recipe": recipe, "case": case, "task": task, "expect": expect, "message": message, "error": error},
    )


@login_required
def case_change_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """The author revises a change of a case file."""
    require(request.user, "edit")
    change = get_object_or_404(ChangeRequest, pk=pk)
    if change.author_id != request.user.pk and not user_can(request.user, "admin"):
        raise PermissionDenied("only the author (or an admin) can revise a change request")
    if not change.is_open or not change_is_case_edit(change):
        messages.error(request, "this change request cannot be revised here")
        return redirect("change_detail", pk=pk)
    text, message, error = change.proposed_text, "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_broken({change.new_path: text})
            change_request_update(change=change, user=request.user, text=normalize_text(text), message=message)
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, "Revised; the reviewers see the new diff.")
            return redirect("change_detail", pk=pk)
    recipe = get_object_or_404(Recipe, kind=change.kind, name=change.name)
    parts = change.new_path.rsplit("/", 2)
    return _editor(
        request,
        recipe=recipe,
        case=parts[-2],
        filename=parts[-1],
        path=change.new_path,
        text=text,
        message=message,
        error=error,
        change=change,
    )


def _refuse_broken(files: dict[str, str]) -> None:
    """The editor proposes only case files that read: the errors at their file and line."""
    errors = []
    for path, text in files.items():
        text = normalize_text(text)
        if path.endswith("/task.md"):
            errors += parse_task(text, path=path)[-1]
        elif path.endswith("/expect.yaml"):
            errors += parse_expect(text, path=path)[1]
        elif path.endswith("/judge.md"):
            errors += parse_rubric(text, path=path)[1]
    if errors:
        raise ReviewError("nothing was saved: " + "; ".join(str(e) for e in errors))


def _editor(request: HttpRequest, **context) -> HttpResponse:
    return render(request, "evals/case_editor.html", {"branch": settings.RYSH_RECIPES_BRANCH, **context})


def change_merge_context(change: ChangeRequest) -> dict:
    """The blockers the change page shows next to Approve (the merge gate)."""
    return {"merge_blockers": change_merge_blockers(change) if change.is_open else []}
