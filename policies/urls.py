from django.urls import path

from policies import views

urlpatterns = [
    path("recipes/policy/", views.policy, name="policy"),
]
