from django.urls import path

from audit import views

urlpatterns = [
    path("audit/", views.audit_list, name="audit_list"),
    path("audit.csv", views.audit_csv, name="audit_csv"),
]
