"""Browser profiles of web recipes: their names, sizes and last use; operators may delete one.

Nothing inside a profile (cookies, storage) is ever read or served here.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from agents import profiles
from rysh_site.roles import require, user_can


@login_required
def profile_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    return render(
        request,
        "agents/profiles.html",
        {"profiles": profiles.profiles_list(), "can_operate": user_can(request.user, "operate")},
    )


@login_required
@require_POST
def profile_delete(request: HttpRequest, name: str) -> HttpResponse:
    require(request.user, "operate")
    try:
        said = profiles.profile_delete(name=name, user=request.user)
    except profiles.ProfileRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, said)
    return redirect("profile_list")
