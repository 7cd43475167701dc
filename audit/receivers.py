"""People and their accounts, wherever they are changed (the admin, a shell, seed_demo): a user's
groups added or removed and the superuser flag turned on or off (role changes); users created,
deactivated, reactivated and deleted; groups created, renamed and deleted (roles are group names:
rysh_site/roles.py); logins, failed logins and logouts. The actor is whoever is logged in (the
admin is a web request; a login names the user who logged in); with no request the row has no
actor and says `system`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import m2m_changed, post_save, pre_delete, pre_save
from django.dispatch import receiver

from audit.services import audit_record

User = get_user_model()
WATCHED = {"is_superuser", "is_active"}  # the fields of a user whose change is recorded
USERNAME_MAX = 150


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="audit_groups_changed")
def groups_changed(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    if action == "pre_clear":
        # the cleared pks are gone by post_clear: note them now
        instance._audit_cleared = set((instance.user_set if reverse else instance.groups).values_list("pk", flat=True))
        return
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    pks = instance.__dict__.pop("_audit_cleared", set()) if action == "post_clear" else set(pk_set or ())
    if not pks:
        return
    verb = "role.add" if action == "post_add" else "role.remove"
    if reverse:  # group.user_set.add(user, …): one row per user
        for user in User.objects.filter(pk__in=pks):
            audit_record(action=verb, target=_user_target(user), detail={"groups": [instance.name]})
    else:
        names = sorted(Group.objects.filter(pk__in=pks).values_list("name", flat=True))
        audit_record(action=verb, target=_user_target(instance), detail={"groups": names})


@receiver(pre_save, sender=User, dispatch_uid="audit_user_before")
def user_before(sender, instance, update_fields=None, raw=False, **kwargs) -> None:
    if raw or instance.pk is None or (update_fields is not None and not WATCHED & set(update_fields)):
        return  # a login's last_login save does not touch roles or the active flag: no extra query
    instance._audit_was = User.objects.filter(pk=instance.pk).values_list("is_superuser", "is_active").first()


@receiver(post_save, sender=User, dispatch_uid="audit_user_after")
def user_after(sender, instance, created, raw=False, **kwargs) -> None:
    was = instance.__dict__.pop("_audit_was", None)
    if raw:
        return
    target = _user_target(instance)
    if created:
        audit_record(action="user.create", target=target, detail={"active": instance.is_active})
        if instance.is_superuser:
            audit_record(action="role.add", target=target, detail={"superuser": True})
        return
    if was is None:
        return
    was_superuser, was_active = was
    if was_active != instance.is_active:
        audit_record(action="user.activate" if instance.is_active else "user.deactivate", target=target)
    if was_superuser != instance.is_superuser:
        verb = "role.add" if instance.is_superuser else "role.remove"
        audit_record(action=verb, target=target, detail={"superuser": instance.is_superuser})


@receiver(pre_delete, sender=User, dispatch_uid="audit_user_delete")
def user_deleted(sender, instance, **kwargs) -> None:
    """Before the row goes: a user deleting themselves is still there to be the actor (their
    rows, this one included, then lose the link and keep the name)."""
    detail = {"groups": sorted(instance.groups.values_list("name", flat=True))}
    if instance.is_superuser:
        detail["superuser"] = True
    audit_record(action="user.delete", target=_user_target(instance), detail=detail)


# -- groups: roles are group names, so renaming or deleting a group changes its members' roles -----


@receiver(pre_save, sender=Group, dispatch_uid="audit_group_before")
def group_before(sender, instance, raw=False, **kwargs) -> None:
    if not raw and instance.pk is not None:
        instance._audit_was_name = Group.objects.filter(pk=instance.pk).values_list("name", flat=True).first()


@receiver(post_save, sender=Group, dispatch_uid="audit_group_after")
def group_after(sender, instance, created, raw=False, **kwargs) -> None:
    was = instance.__dict__.pop("_audit_was_name", None)
    if raw:
        return
    if created:
        audit_record(action="group.create", target=_group_target(instance))
    elif was is not None and was != instance.name:
        detail = {"from": was, "to": instance.name, "members": _members(instance)}
        audit_record(action="group.rename", target=_group_target(instance), detail=detail)


@receiver(pre_delete, sender=Group, dispatch_uid="audit_group_delete")
def group_deleted(sender, instance, **kwargs) -> None:
    """Deleting a group drops its memberships without an m2m signal: its members are named here."""
    audit_record(action="group.delete", target=_group_target(instance), detail={"members": _members(instance)})


# -- logins ----------------------------------------------------------------------------------------


@receiver(user_logged_in, dispatch_uid="audit_login")
def logged_in(sender, request, user, **kwargs) -> None:
    via = getattr(user, "login_via", None)  # "oidc": the company login (accounts/backends.py)
    audit_record(actor=user, action="auth.login", target=_user_target(user), detail={"via": via} if via else None)


@receiver(user_logged_out, dispatch_uid="audit_logout")
def logged_out(sender, request, user, **kwargs) -> None:
    if user is not None:  # logging out without a session: nobody to name
        audit_record(actor=user, action="auth.logout", target=_user_target(user))


@receiver(user_login_failed, dispatch_uid="audit_login_failed")
def login_failed(sender, credentials, request=None, **kwargs) -> None:
    """The username tried, never the password (Django has masked it already; only the username
    is read). An attempt the login throttle refused unchecked writes nothing: a flood of them
    must not fill an append-only log. The one that reaches the limit says `locked_out` (axes'
    receiver, connected first, has marked the request and counted the failure)."""
    if getattr(request, "axes_locked_out", False) and getattr(request, "axes_failures_since_start", None) is None:
        return  # refused before the password was checked (rysh_site/throttle.py)
    tried = str(credentials.get(User.USERNAME_FIELD) or "")[:USERNAME_MAX]
    user = User._default_manager.filter(**{User.USERNAME_FIELD: tried}).first() if tried else None
    target = _user_target(user) if user else ("user", "", f"user {tried} (no such user)" if tried else "")
    detail = {"username": tried}
    if getattr(request, "axes_locked_out", False):
        detail["locked_out"] = True
    audit_record(action="auth.login_failed", target=target, detail=detail)


def _members(group) -> list[str]:
    return sorted(group.user_set.values_list(User.USERNAME_FIELD, flat=True))


def _group_target(group) -> tuple[str, int, str]:
    return ("group", group.pk, f"group #{group.pk} {group.name}")


def _user_target(user) -> tuple[str, int, str]:
    return ("user", user.pk, f"user #{user.pk} {user.get_username()}")
