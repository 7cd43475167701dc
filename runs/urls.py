from django.urls import path

from runs import views
from runs.forks import views as views_forks

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("runs/<int:pk>/stop/", views.run_stop, name="run_stop"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/continue/", views.run_continue, name="run_continue"),
    path("runs/<int:pk>/resume/", views.run_resume, name="run_resume"),
    path("runs/<int:pk>/land/", views.run_land, name="run_land"),
    path("runs/<int:pk>/grant/", views.run_grant, name="run_grant"),
    path("runs/<int:pk>/files/<path:name>", views.run_file, name="run_file"),
    path("approvals/", views.approvals_inbox, name="approvals_inbox"),
    path("runs/<int:pk>/approvals/<int:approval_pk>/approve/", views.approval_approve, name="approval_approve"),
    path("runs/<int:pk>/approvals/<int:approval_pk>/reject/", views.approval_reject, name="approval_reject"),
    path("runs/<int:pk>/steps/<int:step_pk>/screenshot.jpg", views.step_screenshot, name="step_screenshot"),
    path("runs/<int:pk>/videos/<str:name>", views.run_video, name="run_video"),
    path("recipes/<str:kind>/<str:name>/run/", views.run_new, name="run_new"),
    path("recipes/<str:kind>/<str:name>/run/preview/", views.run_preview, name="run_preview"),
    path("runs/<int:pk>/passes/<int:number>/label/", views.verdict_label, name="verdict_label"),
    path("runs/<int:pk>/fork/", views_forks.run_fork_new, name="run_fork_new"),
    path("runs/<int:pk>/propose/", views_forks.run_propose, name="run_propose"),
    path("runs/<int:pk>/compare/", views_forks.run_compare, name="run_compare"),
    path("runs/<int:pk>/family/", views_forks.run_family_page, name="run_family"),
    path("history/", views.history, name="history"),
    path("history.csv", views.history_csv, name="history_csv"),
]
