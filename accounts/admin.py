from django.contrib import admin

from accounts.models import OIDCIdentity


@admin.register(OIDCIdentity)
class OIDCIdentityAdmin(admin.ModelAdmin):
    """Linking a local account to a provider's person by hand (docs/login.md): the subject is in
    the audit line of their refused first login."""

    list_display = ("user", "subject", "issuer", "last_login_at", "last_groups")
    search_fields = ("user__username", "subject")
    readonly_fields = ("linked_at", "last_groups", "last_login_at")
