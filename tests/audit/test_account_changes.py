"""People and their accounts in the audit log: logins, failed logins (the username, never the
password), logouts; users created, deactivated and deleted; groups created, renamed and deleted
(roles are group names) and their members — from the dashboard, the admin or a shell."""

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from audit.models import AuditEntry

pytestmark = pytest.mark.django_db

ADDRESS = "203.0.113.9"
SECRET = "Sup3r-secret-pass"


def rows(prefix: str, after: int = 0) -> list[tuple]:
    entries = AuditEntry.objects.filter(action__startswith=prefix, id__gt=after).order_by("id")
    return list(entries.values_list("action", "actor_name", "source", "address", "target_label"))


@pytest.fixture
def since() -> int:
    """The newest row before the test: migrating wrote a `group.create` for each role group."""
    return AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0


@pytest.fixture
def ann():
    return User.objects.create_user("ann", password=SECRET)


@pytest.fixture
def admin_client():
    root = User.objects.create_superuser("root", password="x")
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(root)
    return client


def post_login(username: str, password: str, path: str = "/login/") -> Client:
    client = Client(REMOTE_ADDR=ADDRESS)
    client.post(path, {"username": username, "password": password})
    return client


# -- logins ------------------------------------------------------------------------------------------


def test_it_records_a_login_and_a_logout_with_who_and_where(ann):
    client = post_login("ann", SECRET)
    client.post("/logout/")
    assert rows("auth.") == [
        ("auth.login", "ann", "web", ADDRESS, f"user #{ann.pk} ann"),
        ("auth.logout", "ann", "web", ADDRESS, f"user #{ann.pk} ann"),
    ]
    assert AuditEntry.objects.get(action="auth.login").actor == ann


def test_it_records_a_login_to_the_admin(ann):
    ann.is_staff = True
    ann.save()
    post_login("ann", SECRET, "/admin/login/?next=/admin/")
    assert rows("auth.") == [("auth.login", "ann", "web", ADDRESS, f"user #{ann.pk} ann")]


def test_it_records_a_failed_login_with_the_username_and_never_the_password(ann):
    post_login("ann", "wrong-" + SECRET)
    post_login("nobody", SECRET)
    assert rows("auth.") == [
        ("auth.login_failed", "", "web", ADDRESS, f"user #{ann.pk} ann"),
        ("auth.login_failed", "", "web", ADDRESS, "user nobody (no such user)"),
    ]
    assert [e.detail for e in AuditEntry.objects.filter(action="auth.login_failed").order_by("id")] == [
        {"username": "ann"},
        {"username": "nobody"},
    ]
    assert all(e.actor is None for e in AuditEntry.objects.filter(action="auth.login_failed"))
    stored = str(list(AuditEntry.objects.values_list("detail", "target_label", "actor_name")))
    assert SECRET not in stored and "*****" not in stored


def test_it_says_when_a_failure_locks_out_and_records_no_refused_attempt(ann):
    for _ in range(5):
        post_login("ann", "wrong")
    for _ in range(20):  # refused unchecked: a flood of these writes nothing
        post_login("ann", SECRET)
    details = [e.detail for e in AuditEntry.objects.filter(action="auth.login_failed").order_by("id")]
    assert details == [{"username": "ann"}] * 4 + [{"username": "ann", "locked_out": True}]
    assert not AuditEntry.objects.filter(action="auth.login").exists()


# -- users -------------------------------------------------------------------------------------------


def test_it_records_a_user_created_deactivated_reactivated_and_deleted_in_the_admin(admin_client):
    form = {
        "username": "bob",
        "password1": "Xq7-long-pass-9",
        "password2": "Xq7-long-pass-9",
        "usable_password": "true",
    }
    assert admin_client.post("/admin/auth/user/add/", form).status_code == 302
    bob = User.objects.get(username="bob")
    change = {"username": "bob", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"}  # is_active left off
    assert admin_client.post(f"/admin/auth/user/{bob.pk}/change/", change).status_code == 302
    assert admin_client.post(f"/admin/auth/user/{bob.pk}/change/", {**change, "is_active": "on"}).status_code == 302
    assert admin_client.post(f"/admin/auth/user/{bob.pk}/delete/", {"post": "yes"}).status_code == 302
    label = f"user #{bob.pk} bob"
    assert rows("user.")[-4:] == [
        ("user.create", "root", "web", ADDRESS, label),
        ("user.deactivate", "root", "web", ADDRESS, label),
        ("user.activate", "root", "web", ADDRESS, label),
        ("user.delete", "root", "web", ADDRESS, label),
    ]


def test_it_records_a_user_deactivated_from_a_shell_as_system(ann):
    ann.is_active = False
    ann.save()
    assert rows("user.") == [
        ("user.create", "", "system", None, f"user #{ann.pk} ann"),
        ("user.deactivate", "", "system", None, f"user #{ann.pk} ann"),
    ]


def test_a_deleted_user_keeps_their_groups_in_the_row_and_their_name_on_their_rows(ann):
    ann.groups.add(Group.objects.get_or_create(name="operator")[0])
    pk = ann.pk
    ann.delete()
    deleted = AuditEntry.objects.get(action="user.delete")
    assert deleted.detail == {"groups": ["operator"]} and deleted.target_label == f"user #{pk} ann"


def test_a_user_deleting_themselves_is_recorded_under_their_name():
    root = User.objects.create_superuser("root", password="x")
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(root)
    assert client.post(f"/admin/auth/user/{root.pk}/delete/", {"post": "yes"}).status_code == 302
    row = AuditEntry.objects.get(action="user.delete")
    assert (row.actor, row.actor_name, row.detail) == (None, "root", {"groups": [], "superuser": True})


# -- groups ------------------------------------------------------------------------------------------


def test_it_records_a_group_created_renamed_and_deleted_in_the_admin_with_its_members(admin_client, ann):
    Group.objects.filter(name="editor").delete()  # the role groups exist from the start
    start = AuditEntry.objects.order_by("-id").values_list("id", flat=True).first()
    assert admin_client.post("/admin/auth/group/add/", {"name": "editors"}).status_code == 302
    group = Group.objects.get(name="editors")
    group.user_set.add(ann)
    # renaming "editors" to "editor" makes every member an editor
    assert admin_client.post(f"/admin/auth/group/{group.pk}/change/", {"name": "editor"}).status_code == 302
    assert admin_client.post(f"/admin/auth/group/{group.pk}/delete/", {"post": "yes"}).status_code == 302
    assert rows("group.", after=start) == [
        ("group.create", "root", "web", ADDRESS, f"group #{group.pk} editors"),
        ("group.rename", "root", "web", ADDRESS, f"group #{group.pk} editor"),
        ("group.delete", "root", "web", ADDRESS, f"group #{group.pk} editor"),
    ]
    rename, delete = (AuditEntry.objects.filter(action=a).latest("id") for a in ("group.rename", "group.delete"))
    assert rename.detail == {"from": "editors", "to": "editor", "members": ["ann"]}
    assert delete.detail == {"members": ["ann"]}


def test_it_records_nothing_when_a_group_is_saved_unchanged(since):
    group = Group.objects.create(name="night-shift")
    group.save()
    assert [e.action for e in AuditEntry.objects.filter(id__gt=since)] == ["group.create"]


def test_it_records_members_added_and_removed_from_the_group_side(ann):
    group = Group.objects.get_or_create(name="operator")[0]
    group.user_set.add(ann)
    group.user_set.remove(ann)
    assert [(e.action, e.detail) for e in AuditEntry.objects.filter(action__startswith="role.").order_by("id")] == [
        ("role.add", {"groups": ["operator"]}),
        ("role.remove", {"groups": ["operator"]}),
    ]
