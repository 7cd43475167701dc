from django.urls import path

from ops import storage_views, views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),  # public: docs/operations.md
    path("readyz", views.readyz, name="readyz"),  # public: docs/operations.md
    path("metrics", views.metrics, name="metrics"),  # token / allow-list, no session: docs/metrics.md
    path("operations/storage/", storage_views.storage, name="storage"),  # admins: docs/retention.md
    path("operations/storage/prune", storage_views.storage_prune, name="storage_prune"),
]
