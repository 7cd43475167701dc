from django.urls import path

from ops import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),  # public: docs/operations.md
    path("readyz", views.readyz, name="readyz"),  # public: docs/operations.md
    path("metrics", views.metrics, name="metrics"),  # token / allow-list, no session: docs/metrics.md
]
