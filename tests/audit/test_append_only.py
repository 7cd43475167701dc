"""Audit rows are append-only: no save of a stored row, no delete, no queryset update or
delete, and the admin shows them read-only."""

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.test import RequestFactory

from audit.models import AppendOnly, AuditEntry
from audit.services import audit_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry():
    return audit_record(action="run.stop", target=("run", 7, "run #7 task/notes"), detail={"reason": "x"})


def test_it_refuses_to_save_a_stored_row_again(entry):
    entry.action = "run.start"
    with pytest.raises(AppendOnly):
        entry.save()
    with pytest.raises(AppendOnly):
        entry.save(update_fields=["action"])
    assert AuditEntry.objects.get(pk=entry.pk).action == "run.stop"


def test_it_never_overwrites_a_row_through_a_new_object_with_its_id(entry):
    forged = AuditEntry(pk=entry.pk, action="run.start", source="web")
    with pytest.raises(IntegrityError), transaction.atomic():  # an INSERT, always: the id is taken
        forged.save()
    assert AuditEntry.objects.get(pk=entry.pk).action == "run.stop"


def test_it_refuses_to_delete_a_row(entry):
    with pytest.raises(AppendOnly):
        entry.delete()
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


def test_it_refuses_queryset_updates_and_deletes(entry):
    with pytest.raises(AppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(action="run.start")
    with pytest.raises(AppendOnly):
        AuditEntry.objects.all().delete()
    with pytest.raises(AppendOnly):
        AuditEntry.objects.bulk_update([entry], ["action"])
    assert AuditEntry.objects.get(pk=entry.pk).action == "run.stop"


def test_it_keeps_the_rows_of_a_deleted_user_with_their_name():
    bob = User.objects.create_user("bob", password="x")
    row = audit_record(actor=bob, action="run.stop", target=("run", 1, "run #1 task/a"))
    bob.delete()
    row = AuditEntry.objects.get(pk=row.pk)
    assert row.actor is None and row.actor_name == "bob"


def test_the_admin_shows_rows_but_cannot_add_change_or_delete_them(entry, client):
    root = User.objects.create_superuser("root", password="x")
    request = RequestFactory().get("/admin/")
    request.user = root
    admin = site._registry[AuditEntry]
    assert admin.has_view_permission(request, entry)
    assert not admin.has_add_permission(request)
    assert not admin.has_change_permission(request, entry)
    assert not admin.has_delete_permission(request, entry)
    assert "delete_selected" not in admin.get_actions(request)
    client.force_login(root)
    assert client.get("/admin/audit/auditentry/").status_code == 200
    assert client.get("/admin/audit/auditentry/add/").status_code == 403
    assert client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    page = client.get(f"/admin/audit/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()  # a view, no form
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
