from django.urls import path

from reviews.views import editor, files, review

urlpatterns = [
    path("recipes/new/", editor.recipe_new, name="recipe_new"),
    path("recipes/validate/", editor.recipe_validate, name="recipe_validate"),
    path("recipes/<str:kind>/<str:name>/edit/", editor.recipe_edit, name="recipe_edit"),
    path("recipes/<str:kind>/<str:name>/rename/", editor.recipe_rename, name="recipe_rename"),
    path("recipes/<str:kind>/<str:name>/delete/", editor.recipe_delete, name="recipe_delete"),
    path("packages/<str:name>/edit/<str:which>/", files.package_file_edit, name="package_file_edit"),
    path("changes/validate-file/", files.file_validate, name="file_validate"),
    path("changes/<int:pk>/edit-file/", files.file_change_edit, name="file_change_edit"),
    path("changes/", review.change_list, name="change_list"),
    path("changes/<int:pk>/", review.change_detail, name="change_detail"),
    path("changes/<int:pk>/edit/", editor.change_edit, name="change_edit"),
    path("changes/<int:pk>/comment/", review.change_comment, name="change_comment"),
    path("changes/<int:pk>/approve/", review.change_approve, name="change_approve"),
    path("changes/<int:pk>/request-changes/", review.change_request_changes, name="change_request_changes"),
    path("changes/<int:pk>/close/", review.change_close, name="change_close"),
    path("changes/<int:pk>/rejudge/", review.change_rejudge, name="change_rejudge"),
    path("changes/<int:pk>/rejudge/<int:rejudge_id>/", review.change_rejudge_status, name="change_rejudge_status"),
]
