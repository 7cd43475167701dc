from django.urls import path

from automations.views import recipes

urlpatterns = [
    path("", recipes.recipe_list, name="home"),
    path("recipes/", recipes.recipe_list, name="recipe_list"),
]
