from django.contrib import admin

from policies.models import OrgPolicy


@admin.register(OrgPolicy)
class OrgPolicyAdmin(admin.ModelAdmin):
    """The organisation's policy (docs/policy.md): YAML checked on save, the line of every
    error shown under the field; one row."""

    list_display = ("__str__", "updated_at", "updated_by")
    readonly_fields = ("updated_at", "updated_by")

    def has_add_permission(self, request) -> bool:
        return not OrgPolicy.objects.exists()

    def save_model(self, request, obj, form, change) -> None:
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)
