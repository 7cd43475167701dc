"""The recipe editor: edit, create from a template, rename, delete — each a change request —
and the live validation that answers as you type.

Validation posts the text and swaps only #validation (errors at their lines and the plan
preview); the textarea is never a swap target, so nothing the user typed is ever replaced.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from catalogue.checks import text_issues
from catalogue.repo import RepoError
from catalogue.spec import FOLDERS, Kind
from catalogue.views import _get_recipe_for_user
from reviews.models import ChangeAction, ChangeRequest, ChangeState
from reviews.repo_files import is_repo_file
from reviews.selectors import change_request_theirs, recipe_text_check
from reviews.services import (
    ReviewError,
    change_request_delete,
    change_request_open,
    change_request_rename,
    change_request_update,
    normalize_text,
    text_diff,
)
from reviews.starters import TEMPLATES
from rysh_site.roles import require, user_can

EDITOR = "reviews/editor.html"


@login_required
def recipe_edit(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    recipe = _get_recipe_for_user(request, kind, name)
    require(request.user, "edit")
    if recipe.archived or recipe.latest is None:
        messages.error(request, f"{recipe.target} was deleted from the repository; it cannot be edited")
        return redirect("recipe_detail", kind=kind, name=name)
    text, message, error = recipe.latest.text, "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_invalid(text, kind=kind, name=name)
            change = change_request_open(user=request.user, kind=kind, name=name, text=text, message=message)
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Proposed as change request #{change.pk}; someone else reviews and merges it.")
            return redirect("change_detail", pk=change.pk)
    return render(
        request,
        EDITOR,
        {
            "mode": "edit",
            "recipe": recipe,
            "branch": settings.RYSH_RECIPES_BRANCH,
            "kind": kind,
            "name": name,
            "text": text,
            "message": message,
            "error": error,
            **recipe_text_check(
                normalize_text(text), kind=kind, name=name, against=recipe.good.text if recipe.good else None
            ),
        },
    )


@login_required
def recipe_new(request: HttpRequest) -> HttpResponse:
    require(request.user, "edit")
    kind = request.POST.get("kind") or request.GET.get("kind") or "task"
    kind = kind if kind in FOLDERS else "task"
    template = request.GET.get("template") or kind  # each kind has a starter named after it
    name = request.POST.get("name", "").strip()
    text = request.POST.get("text") or TEMPLATES.get(template, TEMPLATES["task"])[1]
    message, error = request.POST.get("message", ""), ""
    if request.method == "POST":
        try:
            _refuse_invalid(text, kind=kind, name=name)
            change = change_request_open(
                user=request.user, kind=kind, name=name, text=text, message=message, create=True
            )
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Proposed as change request #{change.pk}.")
            return redirect("change_detail", pk=change.pk)
    return render(
        request,
        EDITOR,
        {
            "mode": "new",
            "branch": settings.RYSH_RECIPES_BRANCH,
            "kind": kind,
            "name": name,
            "text": text,
            "message": message,
            "error": error,
            "templates": TEMPLATES,
            "template": template,
            "kinds": [Kind.TASK, Kind.CODE, Kind.WEB],  # the picker's order: the plain task first
            **recipe_text_check(normalize_text(text), kind=kind, name=name or "new-recipe"),
        },
    )


@login_required
@require_POST
def recipe_validate(request: HttpRequest) -> HttpResponse:
    """The live check: the text in, the errors at their lines and the plan preview out."""
    require(request.user, "edit")
    kind = request.POST.get("kind", "task")
    name = request.POST.get("name", "").strip() or "new-recipe"
    against = None
    if request.POST.get("against"):  # the running version, for the cost delta
        recipe = _get_recipe_for_user(request, kind, request.POST["against"])
        against = recipe.good.text if recipe.good else None
    elif request.POST.get("change", "").isdigit():  # a revision: against the change's base
        against = get_object_or_404(ChangeRequest, pk=int(request.POST["change"])).base_text or None
    text = normalize_text(request.POST.get("text", ""))
    context = recipe_text_check(text, kind=kind, name=name, against=against)
    if not context["issues"]:  # what needs the database, e.g. notify: channels (catalogue.checks)
        context["issues"] = text_issues(text, path=f"{name}.md", kind=kind, name=name)
    return render(request, "reviews/editor/_validation.html", context)


def _refuse_invalid(text: str, *, kind: str, name: str) -> None:
    """The editor proposes only recipes that parse: the errors are on screen, fix them first.
    (A broken version can still reach the branch from outside; sync keeps the good one running.)"""
    issues = recipe_text_check(normalize_text(text), kind=kind, name=name or "new-recipe")["issues"]
    if issues:
        raise ReviewError(
            f"fix the {len(issues)} error{'s' if len(issues) > 1 else ''} shown "
            "beside the text first; nothing was saved"
        )


@login_required
@require_POST
def recipe_rename(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    _get_recipe_for_user(request, kind, name)
    return _propose(
        request,
        kind,
        name,
        lambda: change_request_rename(
            user=request.user,
            kind=kind,
            name=name,
            new_name=request.POST.get("new_name", "").strip(),
            message=request.POST.get("message", ""),
        ),
    )


@login_required
@require_POST
def recipe_delete(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    _get_recipe_for_user(request, kind, name)
    return _propose(
        request,
        kind,
        name,
        lambda: change_request_delete(user=request.user, kind=kind, name=name, message=request.POST.get("message", "")),
    )


def _propose(request: HttpRequest, kind: str, name: str, make: Callable[[], ChangeRequest]) -> HttpResponse:
    try:
        change = make()
    except (ReviewError, RepoError) as exc:
        messages.error(request, str(exc))
        return redirect("recipe_detail", kind=kind, name=name)
    messages.success(request, f"Proposed as change request #{change.pk}.")
    return redirect("change_detail", pk=change.pk)


@login_required
def change_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """The author revises a change request; in conflict, against the tracked branch's head."""
    require(request.user, "edit")
    change = get_object_or_404(ChangeRequest, pk=pk)
    if change.author_id != request.user.pk and not user_can(request.user, "admin"):
        raise PermissionDenied("only the author (or an admin) can revise a change request")
    if not change.is_open or change.action == ChangeAction.DELETE:
        messages.error(request, "this change request cannot be revised")
        return redirect("change_detail", pk=pk)
    if "/evals/" in change.new_path:  # an eval case's file: its own editor (docs/evals.md)
        return redirect("case_change_edit", pk=pk)
    if is_repo_file(change):  # a package's or the policy's file: read by its own reader
        return redirect("file_change_edit", pk=pk)
    text, message, error = change.proposed_text, "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_invalid(text, kind=change.kind, name=change.new_name or change.name)
            change_request_update(change=change, user=request.user, text=text, message=message)
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, "Revised; the reviewers see the new diff.")
            return redirect("change_detail", pk=pk)
    theirs = change_request_theirs(change) if change.state == ChangeState.CONFLICT else None
    kind, name = change.kind, change.new_name or change.name
    return render(
        request,
        EDITOR,
        {
            "mode": "revise",
            "branch": change.target_branch,
            "change": change,
            "kind": kind,
            "name": name,
            "text": text,
            "message": message,
            "error": error,
            "theirs": theirs,
            "theirs_diff": text_diff(theirs, normalize_text(text)) if theirs is not None else None,
            **recipe_text_check(normalize_text(text), kind=kind, name=name, against=change.base_text or None),
        },
    )
