"""The policy page (docs/policy.md): the merged policy every run obeys, its source files, what
the last sync found wrong with the repository's file, and its open change requests (the file is
edited through review: reviews/views/files.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from policies.selectors import policy_overview
from reviews.selectors import change_requests_open_for_file
from rysh_site.roles import user_can


@login_required
def policy(request: HttpRequest) -> HttpResponse:
    overview = policy_overview()
    return render(
        request,
        "policies/policy.html",
        {
            "overview": overview,
            "lines": overview.merged.lines() if overview.merged else [],
            "can_admin": user_can(request.user, "admin"),
            # the repository's file changes through review, like a recipe
            "can_edit": user_can(request.user, "edit"),
            "changes": change_requests_open_for_file(kind="policy", name="policy"),
        },
    )
