from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API under /api/ (django-ninja) and its tokens: scoped, hashed, expiring,
    revocable, each call rate-limited and audited under the token's owner."""

    name = "api"
    default_auto_field = "django.db.models.BigAutoField"
