"""The audit page (`/audit/`) and its CSV export (`/audit.csv`): operators and admins only.

Read-only: nothing here (or in the admin) edits or deletes a row.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from audit import selectors
from audit.forms import AuditFilterForm
from audit.models import AuditEntry
from rysh_site.csv_export import csv_cell, csv_writer
from rysh_site.roles import user_can

PAGE_SIZE = 50
RESULTS_FRAGMENT = "audit/audit_list/_results.html"
CSV_HEADER = [
    "at",
    "actor",
    "action",
    "target_type",
    "target_id",
    "target",
    "source",
    "address",
    "detail",
]


def _require_reader(request: HttpRequest) -> None:
    if not user_can(request.user, "audit"):
        raise PermissionDenied("the audit log is for operators and admins")


def _entries(form: AuditFilterForm) -> QuerySet[AuditEntry]:
    """None while a filter is in error: a list that quietly ignored it would look filtered."""
    if not form.is_valid():
        return AuditEntry.objects.none()
    return selectors.audit_entries(**form.cleaned_data).select_related("actor")


@login_required
@vary_on_headers("HX-Request")
def audit_list(request: HttpRequest) -> HttpResponse:
    _require_reader(request)
    form = AuditFilterForm(request.GET)
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "page": Paginator(_entries(form), PAGE_SIZE).get_page(request.GET.get("page")),
        "form": form,
        "query": query.urlencode(),
    }
    template = RESULTS_FRAGMENT if request.htmx else "audit/audit_list.html"
    return render(request, template, context, status=200 if form.is_valid() else 400)


def _csv_rows(entries: QuerySet[AuditEntry]) -> Iterator[str]:
    writer = csv_writer()
    yield writer.writerow(CSV_HEADER)
    for e in entries.iterator():
        row = [
            e.at.isoformat(),
            e.actor_name,
            e.action,
            e.target_type,
            e.target_id,
            e.target_label,
            e.source,
            e.address or "",
            e.detail_text,
        ]
        yield writer.writerow([csv_cell(cell) for cell in row])


@login_required
def audit_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    _require_reader(request)
    form = AuditFilterForm(request.GET)
    if not form.is_valid():  # the same answer as the page: no export of a filter it could not read
        return HttpResponse("\n".join(form.error_lines()) + "\n", status=400, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(_csv_rows(selectors.audit_entries(**form.cleaned_data)), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="rysh-audit.csv"'
    return response
