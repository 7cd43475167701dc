"""The admin shows audit entries read-only: no add, change or delete, for anyone."""

from __future__ import annotations

from django.contrib import admin

from audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "actor_name", "action", "target_label", "source", "address")
    list_filter = ("source", "action")
    search_fields = ("actor_name", "action", "target_label", "target_id")
    date_hierarchy = "at"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
