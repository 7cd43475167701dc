"""rysh's packages (docs/packages.md): the list, a package's page with its SKILL.md rendered,
and the Run form that starts an agent package with a person's prompt and budget."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from catalogue.markdown import render_markdown
from catalogue.package_selectors import package_get, package_list, package_row
from catalogue.packages import MANIFEST_NAME
from catalogue.recipe.reader import split_frontmatter
from reviews.selectors import change_requests_open_for_file
from reviews.services import text_diff
from runs.packages import package_run_start
from runs.selectors import package_runs_recent
from runs.services import RunRefused
from rysh_site.roles import require, user_can


class PackageRunForm(forms.Form):
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=20_000)
    budget = forms.CharField(required=False, max_length=20, help_text="the pass budget, e.g. 2b; empty: the default")


def _get_package_for_user(request: HttpRequest, name: str, action: str = "view"):
    require(request.user, action)
    package = package_get(name)
    if package is None:
        raise Http404("no such package")
    return package


@login_required
def package_list_view(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    return render(request, "catalogue/package_list.html", {"packages": package_list()})


@login_required
def package_detail(request: HttpRequest, name: str) -> HttpResponse:
    package = _get_package_for_user(request, name)
    return _detail(request, package, PackageRunForm())


def _detail(request, package, form, status: int = 200) -> HttpResponse:
    row = package_row(package)
    shown = package.good or package.latest
    body = split_frontmatter(shown.entry_text, shown.entry_path).body if shown and shown.entry_text else ""
    context = {
        "row": row,
        "package": package,
        "shown": shown,
        "entry_html": render_markdown(body),
        "agent": (package.good.info.get("agent") if package.good else None),
        "form": form,
        "can_run": user_can(request.user, "operate") and row.runnable,
        "runs": package_runs_recent(package=package),
        "can_edit": user_can(request.user, "edit"),  # its files change through review (docs/packages.md)
        "changes": change_requests_open_for_file(kind="package", name=package.name),
        **_newest_change(package),
    }
    return render(request, "catalogue/package_detail.html", context, status=status)


def _newest_change(package) -> dict:
    """What the newest version changed against the one before it: each file's diff (the
    manifest, the entry), as a change request shows a recipe's."""
    latest = package.latest
    before = package.versions.filter(id__lt=latest.pk).order_by("-id").first() if latest else None
    if before is None:
        return {}
    files = [
        (MANIFEST_NAME, before.manifest_text, latest.manifest_text),
        (latest.entry_path or before.entry_path, before.entry_text, latest.entry_text),
    ]
    diffs = [(name, text_diff(old, new)) for name, old, new in files if old != new]
    return {"before": before, "diffs": diffs}


@login_required
@require_POST
def package_run(request: HttpRequest, name: str) -> HttpResponse:
    package = _get_package_for_user(request, name, "operate")
    form = PackageRunForm(request.POST)
    if form.is_valid():
        try:
            run = package_run_start(
                name=package.name,
                words=[form.cleaned_data["prompt"]],
                budget=form.cleaned_data["budget"].strip() or None,
                user=request.user,
            )
        except RunRefused as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("run_detail", pk=run.pk)
    return _detail(request, package, form, status=400)
