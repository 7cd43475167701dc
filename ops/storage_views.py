"""The Storage page (admins only, docs/retention.md): what each kind of data takes, what the next
prune removes, the settings in force, the last prune, and "Prune now"."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from ops import retention
from rysh_site.roles import require


@login_required
@require_GET
def storage(request: HttpRequest) -> HttpResponse:
    require(request.user, "admin")
    sizes = retention.Sizes()
    last = retention.last_prune()
    context = {
        "kinds": retention.retention_plan(sizes=sizes),
        "method": sizes.method,
        "free_bytes": retention.free_bytes(),
        "file_bytes": retention.database_file_bytes(),
        "last": last,
        "last_text": retention.last_prune_text(last) if last else "",
        "batch": settings.RYSH_PRUNE_BATCH,
        "caches": retention.caches_held(),
    }
    return render(request, "ops/storage.html", context)


@login_required
@require_POST
def storage_prune(request: HttpRequest) -> HttpResponse:
    """Prune now, as the admin who pressed it (the audit entry names them)."""
    require(request.user, "admin")
    pruned = retention.retention_prune(actor=request.user)
    total = pruned.total
    if total.empty:
        messages.success(request, "Nothing was past its retention: nothing removed.")
    else:
        messages.success(request, f"Pruned {total.rows} row(s) and {total.files} file(s), about {total.bytes:,} bytes.")
    return redirect("storage")
