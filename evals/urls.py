from django.urls import path

from evals import views

urlpatterns = [
    path("changes/<int:pk>/evals/", views.change_evals, name="change_evals"),
    path("changes/<int:pk>/evals/run/", views.change_evals_run, name="change_evals_run"),
    path("changes/<int:pk>/case/", views.case_change_edit, name="case_change_edit"),
    path("recipes/<str:kind>/<str:name>/cases/new/", views.case_new, name="case_new"),
    path("recipes/<str:kind>/<str:name>/cases/<str:case>/<str:filename>/", views.case_edit, name="case_edit"),
]
