from django.apps import AppConfig


class DemoSiteConfig(AppConfig):
    """Tiny Press, the toy publishing site the offline web demo drives (no models)."""

    name = "demo_site"
