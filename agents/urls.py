from django.urls import path

from agents import views

urlpatterns = [
    path("profiles/", views.profile_list, name="profile_list"),
    path("profiles/<str:name>/delete/", views.profile_delete, name="profile_delete"),
]
