from django.urls import path

from workspaces import views

urlpatterns = [
    path("runs/<int:pk>/changes/", views.run_changes, name="run_changes"),
    path("runs/<int:pk>/changes.patch", views.run_patch, name="run_patch"),
    path("runs/<int:pk>/workspace/keep/", views.workspace_keep, name="workspace_keep"),
    path("runs/<int:pk>/workspace/discard/", views.workspace_discard, name="workspace_discard"),
]
