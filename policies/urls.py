from django.urls import path

from policies import views
from reviews.views import files

urlpatterns = [
    path("recipes/policy/", views.policy, name="policy"),
    # ahead of a recipe's own pages; the recipe editor's page, reviewed like a recipe
    path("recipes/policy/edit/", files.policy_edit, name="policy_edit"),
]
