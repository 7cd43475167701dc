from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    """Change requests: the editor, diffs with their cost delta, review and merge."""

    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # a package change is checked by the package reader before it merges (docs/packages.md)
        from reviews.repo_files import package_merge_blockers
        from reviews.services import MERGE_CHECKS

        if package_merge_blockers not in MERGE_CHECKS:
            MERGE_CHECKS.append(package_merge_blockers)
