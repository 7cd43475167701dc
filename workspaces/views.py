"""The run's working copy on the web: its diff (page and fragment), the patch, keep, discard."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from runs.live import fragments
from runs.models import Run
from rysh_site.roles import require
from workspaces import services
from workspaces.copies import CopyError
from workspaces.models import Workspace
from workspaces.selectors import diff_text, diff_view, shown_state


def _get_workspace_for_user(request: HttpRequest, pk: int, action: str = "view") -> Workspace:
    require(request.user, action)
    run = get_object_or_404(Run, pk=pk)
    workspace = Workspace.objects.filter(run=run).select_related("run").first()
    if workspace is None:
        raise Http404("this run has no working copy")
    return workspace


def _pass_number(request: HttpRequest) -> int | None:
    raw = request.GET.get("pass", "")
    return int(raw) if raw.isdigit() else None


@login_required
@vary_on_headers("HX-Request")
def run_changes(request: HttpRequest, pk: int) -> HttpResponse:
    """The unified diff of the whole run or one pass, highlighted and paged."""
    workspace = _get_workspace_for_user(request, pk)
    page = request.GET.get("page", "1")
    diff = diff_view(workspace, pass_number=_pass_number(request), page=int(page) if page.isdigit() else 1)
    context = {"run": workspace.run, "workspace": workspace, "diff": diff, "state": shown_state(workspace)}
    template = "workspaces/_diff.html" if request.htmx else "workspaces/changes.html"
    return render(request, template, context)


@login_required
def run_patch(request: HttpRequest, pk: int) -> HttpResponse:
    """The work as a .patch (`git apply` takes it), whole run or one pass."""
    workspace = _get_workspace_for_user(request, pk)
    number = _pass_number(request)
    try:
        text = diff_text(workspace, number, binary=True)
    except CopyError as exc:
        raise Http404(str(exc)) from None
    name = f"run-{pk}" + (f"-pass-{number}" if number else "") + ".patch"
    response = HttpResponse(text, content_type="text/x-diff; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _act(request: HttpRequest, pk: int, service, **options) -> HttpResponse:
    workspace = _get_workspace_for_user(request, pk, "edit")
    try:
        messages.success(request, service(workspace=workspace, user=request.user, **options))
    except services.WorkspaceRefused as exc:
        messages.error(request, str(exc))
    run = workspace.run
    if not request.htmx:
        return redirect(reverse("run_detail", args=[run.pk]))
    run.refresh_from_db()
    return render(
        request, "runs/run_detail/_control_answer.html", fragments.run_context(run, fragments.grants(request.user))
    )


@login_required
@require_POST
@vary_on_headers("HX-Request")
def workspace_keep(request: HttpRequest, pk: int) -> HttpResponse:
    """Keep the work on the run's branch, or under the branch the person named (Keep as)."""
    branch = request.POST.get("branch", "").strip()[:300]
    return _act(request, pk, services.workspace_keep, branch=branch or None)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def workspace_discard(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.workspace_discard)
