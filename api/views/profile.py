"""/account/tokens/ (the profile page): the logged-in person's API tokens (name, scopes, expiry, last use; revoke) and
the form that makes one, whose secret is shown once, on the answer to the POST, and never
again. Admins see everyone's tokens, may revoke any, and may make one for another user (a
service user for CI)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from api.forms import TokenForm
from api.models import ApiToken
from api.selectors import tokens_all, tokens_of
from api.services import TokenRefused, token_create
from api.services import token_revoke as revoke
from rysh_site.roles import user_can


@login_required
@never_cache  # the answer to a POST carries a secret: no cache may keep it
def tokens(request: HttpRequest) -> HttpResponse:
    is_admin = user_can(request.user, "admin")
    form = TokenForm(request.POST or None, for_others=is_admin)
    created = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created = token_create(
                owner=data.get("owner") or request.user,
                name=data["name"],
                scopes=data["scopes"],
                days=data["days"],
                by=request.user,
            )
        except TokenRefused as exc:
            form.add_error(None, str(exc))
        else:
            form = TokenForm(for_others=is_admin)
    context = {
        "form": form,
        "created": created,
        "tokens": list(tokens_of(request.user)),
        "others": [t for t in tokens_all() if t.owner_id != request.user.pk] if is_admin else [],
    }
    status = 400 if request.method == "POST" and created is None else 200
    return render(request, "api/tokens.html", context, status=status)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.select_related("owner"), pk=pk)
    if token.owner_id != request.user.pk and not user_can(request.user, "admin"):
        raise Http404("no such token")  # another person's token: as if it did not exist
    try:
        revoke(token=token, by=request.user)
    except TokenRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"token {token.name!r} of {token.owner.get_username()} revoked")
    return redirect("account_tokens")
