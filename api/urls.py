"""/api/: the REST API (django-ninja), its OpenAPI document at /api/openapi.json and its
browsable docs at /api/docs (Swagger UI from django-ninja's own static files: nothing from a
CDN). Every endpoint needs `Authorization: Bearer <token>`; the document and the docs page
hold no data but are pages like the others: they need a login (every page does). The profile page, where people make
tokens, is an ordinary logged-in page, /account/tokens/."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.urls import path
from ninja import NinjaAPI

from api.docs import LocalSwagger
from api.views import approvals, evals, forks, packages, profile, recipes, runs, spend
from api.views.common import TokenAuth, install_error_handlers

api = NinjaAPI(
    title="rysh dashboard API",
    version="1",
    description=(
        "Recipes, runs and their controls, approvals, spend and quotas, eval suites. Authenticate with "
        "`Authorization: Bearer <token>` (make one on your profile page). Scopes nest: "
        "read < operate < admin; a token never does more than its owner's roles allow."
    ),
    auth=TokenAuth(),
    urls_namespace="api",
    docs=LocalSwagger(),
    docs_url="/docs",
    openapi_url="/openapi.json",
    docs_decorator=login_required,
)
install_error_handlers(api)
for module in (recipes, evals, runs, forks, approvals, spend, packages):
    api.add_router("/", module.router)

urlpatterns = [
    path("api/", api.urls),
    path("account/tokens/", profile.tokens, name="account_tokens"),
    path("account/tokens/<int:pk>/revoke/", profile.token_revoke, name="token_revoke"),
]
