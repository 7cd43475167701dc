from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from rysh_site.throttle import LoginForm

urlpatterns = [
    # this login and the admin's are throttled in the authentication backend (throttle.py)
    path("login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("oidc/", include("accounts.urls")),  # company login (404 while RYSH_OIDC_ISSUER is unset)
    path("", include("runs.urls")),  # the dashboard is "/", ahead of the catalogue
    path("", include("policies.urls")),  # recipes/policy/, ahead of a recipe's own pages
    path("", include("catalogue.urls")),
    path("", include("reviews.urls")),
    path("", include("evals.urls")),
    path("", include("agents.urls")),
    path("", include("notify.urls")),
    path("", include("toolservers.urls")),
    path("", include("audit.urls")),
    path("", include("spend.urls")),
    path("", include("workspaces.urls")),
    path("", include("api.urls")),
    path(
        "", include("ops.urls")
    ),  # /healthz, /readyz (public probes), /metrics (docs: Operating it)  # /api/ (Bearer tokens only, no session) and /account/tokens/
]
if settings.RYSH_DEMO_SITE:
    # the offline web demo's target, public (no login): mounted only when the demo is on
    urlpatterns.append(path("demo-site/", include("demo_site.urls")))
