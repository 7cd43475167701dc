from django.urls import path

from catalogue import views
from catalogue.packages import views as package_views

urlpatterns = [
    path("", views.recipe_list, name="home"),  # shadowed by the dashboard; LOGIN_REDIRECT_URL's name
    path("recipes/", views.recipe_list, name="recipe_list"),
    path("recipes/sync/", views.recipes_sync_view, name="recipes_sync"),
    path("recipes/repository/", views.recipes_repository, name="recipes_repository"),
    path("hooks/git/", views.git_hook, name="git_hook"),
    path("recipes/<str:kind>/<str:name>/", views.recipe_detail, name="recipe_detail"),
    path("recipes/<str:kind>/<str:name>/diff/", views.recipe_diff, name="recipe_diff"),
    path("packages/", package_views.package_list_view, name="package_list"),
    path("packages/<str:name>/", package_views.package_detail, name="package_detail"),
    path("packages/<str:name>/run/", package_views.package_run, name="package_run"),
]
