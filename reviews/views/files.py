"""The editor for a package's files and the team's policy file (docs/packages.md,
docs/policy.md): the recipe editor's page and live check, with the package reader or the policy
reader in place of the recipe reader. Saving opens a change request for that one file."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from catalogue.package_selectors import package_get
from catalogue.packages import MANIFEST_NAME, PACKAGES_DIR
from catalogue.recipe import NAME_RE
from catalogue.repo import RepoError
from policies.review_checks import policy_change_facts, policy_text_check
from policies.rules import REPO_POLICY
from policies.services import policy_change_open
from reviews.models import ChangeAction, ChangeRequest, ChangeState
from reviews.repo_files import (
    PACKAGE,
    POLICY,
    package_change_facts,
    package_change_open,
    package_file_path,
    package_text_check,
    package_texts,
)
from reviews.selectors import change_request_theirs
from reviews.services import ReviewError, _tracked, change_request_update, normalize_text, text_diff
from rysh_site.roles import require, user_can

EDITOR = "reviews/editor.html"
POLICY_STARTER = "# The team's policy: every run obeys it (docs/policy.md)\nbudget:\n  ceilings:\n    pass: 4b\n"


def _check(kind: str, name: str, path: str, text: str, *, base_sha: str | None = None) -> dict:
    """The live check of one file: the policy reader, or the package reader over the package's
    folder (at `base_sha`, else the tracked branch's head) with this text in place."""
    text = normalize_text(text)
    if kind == POLICY:
        return policy_text_check(text)
    git, _branch, head = _tracked()
    return package_text_check(name, path, text, base=package_texts(git, base_sha or head, name))


def _refuse_invalid(check: dict) -> None:
    """As for recipes: only a file that reads is proposed; the errors are on screen."""
    count = len(check["issues"])
    if count:
        raise ReviewError(
            f"fix the {count} error{'s' if count > 1 else ''} shown beside the text first; nothing was saved"
        )


def _render(request: HttpRequest, *, kind: str, name: str, path: str, text: str, back: tuple[str, str], **extra):
    heading = f"Revise change request #{extra['change'].pk}" if extra.get("change") else f"Edit {path}"
    if kind == POLICY and not extra.get("change") and extra.get("create"):
        heading = f"Create {path}"
    base_sha = extra["change"].base_sha if extra.get("change") else None
    return render(
        request,
        EDITOR,
        {
            "mode": "file",
            "heading": heading,
            "back": back,
            "branch": settings.RYSH_RECIPES_BRANCH,
            "kind": kind,
            "name": name,
            "file_path": path,
            "text": text,
            "message": extra.pop("message", ""),
            "error": extra.pop("error", ""),
            "validate_url": reverse("file_validate"),
            **extra,
            **_check(kind, name, path, text, base_sha=base_sha),
        },
    )


@login_required
def package_file_edit(request: HttpRequest, name: str, which: str) -> HttpResponse:
    """Edit a package's manifest (`which` "manifest") or entry file ("entry")."""
    require(request.user, "edit")
    if package_get(name) is None:
        raise Http404("no such package")
    git, _branch, head = _tracked()
    manifest = git.read_file(head, f"{PACKAGES_DIR}/{name}/{MANIFEST_NAME}")
    if manifest is None:
        raise Http404("the package is not on the tracked branch any more")
    try:
        path = package_file_path(name, which, manifest)
    except ReviewError as exc:
        raise Http404(str(exc)) from None
    text, message, error = git.read_file(head, path) or "", "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_invalid(_check(PACKAGE, name, path, text))
            change = package_change_open(user=request.user, name=name, which=which, text=text, message=message)
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Proposed as change request #{change.pk}; someone else reviews and merges it.")
            return redirect("change_detail", pk=change.pk)
    back = (reverse("package_detail", args=[name]), f"package {name}")
    return _render(request, kind=PACKAGE, name=name, path=path, text=text, back=back, message=message, error=error)


@login_required
def policy_edit(request: HttpRequest) -> HttpResponse:
    """Edit `.rysh/policy.yaml`, or create it when the tracked branch has none."""
    require(request.user, "edit")
    git, _branch, head = _tracked()
    current = git.read_file(head, REPO_POLICY)
    text, message, error = current if current is not None else POLICY_STARTER, "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_invalid(_check(POLICY, "policy", REPO_POLICY, text))
            change = policy_change_open(user=request.user, text=text, message=message)
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Proposed as change request #{change.pk}; someone else reviews and merges it.")
            return redirect("change_detail", pk=change.pk)
    back = (reverse("policy"), "Policy")
    return _render(
        request,
        kind=POLICY,
        name="policy",
        path=REPO_POLICY,
        text=text,
        back=back,
        message=message,
        error=error,
        create=current is None,
    )


@login_required
@require_POST
def file_validate(request: HttpRequest) -> HttpResponse:
    """The live check of a package file or the policy file: the text in, errors or facts out."""
    require(request.user, "edit")
    kind, name = request.POST.get("kind", ""), request.POST.get("name", "")
    if kind not in (PACKAGE, POLICY):
        raise Http404("not a package or policy file")
    base_sha = None
    if request.POST.get("change", "").isdigit():  # a revision: the folder as the change found it
        base_sha = get_object_or_404(ChangeRequest, pk=int(request.POST["change"])).base_sha
    path = REPO_POLICY if kind == POLICY else request.POST.get("path", "")
    if kind == PACKAGE and (not NAME_RE.match(name) or not path.startswith(f"{PACKAGES_DIR}/{name}/")):
        raise Http404("not a file of that package")
    context = _check(kind, name, path, request.POST.get("text", ""), base_sha=base_sha)
    return render(request, "reviews/editor/_validation.html", context)


@login_required
def file_change_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """The author revises a package or policy change request (in conflict, against the tracked
    branch's head), as change_edit does for a recipe."""
    require(request.user, "edit")
    change = get_object_or_404(ChangeRequest, pk=pk, kind__in=(PACKAGE, POLICY))
    if change.author_id != request.user.pk and not user_can(request.user, "admin"):
        raise PermissionDenied("only the author (or an admin) can revise a change request")
    if not change.is_open or change.action == ChangeAction.DELETE:
        messages.error(request, "this change request cannot be revised")
        return redirect("change_detail", pk=pk)
    text, message, error = change.proposed_text, "", ""
    if request.method == "POST":
        text, message = request.POST.get("text", ""), request.POST.get("message", "")
        try:
            _refuse_invalid(_check(change.kind, change.name, change.new_path, text, base_sha=change.base_sha))
            change_request_update(change=change, user=request.user, text=text, message=message)
        except (ReviewError, RepoError) as exc:
            error = str(exc)
        else:
            messages.success(request, "Revised; the reviewers see the new diff.")
            return redirect("change_detail", pk=pk)
    theirs = change_request_theirs(change) if change.state == ChangeState.CONFLICT else None
    return _render(
        request,
        kind=change.kind,
        name=change.name,
        path=change.new_path,
        text=text,
        back=(reverse("change_detail", args=[pk]), f"change request #{pk}"),
        message=message,
        error=error,
        change=change,
        theirs=theirs,
        theirs_diff=text_diff(theirs, normalize_text(text)) if theirs is not None else None,
    )


def change_repo_file_context(change: ChangeRequest) -> dict:
    """What the review page shows of a package or policy change beside its diff (its facts
    before and after, the reader's errors); {} for a recipe's."""
    if change.kind == POLICY:
        return {"repo_file": POLICY, **policy_change_facts(change)}
    if change.kind == PACKAGE:
        return {"repo_file": PACKAGE, **package_change_facts(change)}
    return {}
