from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    """Change requests: the editor, diffs with their cost delta, review and merge."""

    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"
