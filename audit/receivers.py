"""Role changes, wherever they are made (the admin, a shell, seed_demo): a user's groups
added or removed, and the superuser flag turned on or off. The actor is whoever is logged in
(the admin is a web request); with no request the row has no actor and says `system`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models.signals import m2m_changed, post_save, pre_save
from django.dispatch import receiver

from audit.services import audit_record

User = get_user_model()


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


@receiver(pre_save, sender=User, dispatch_uid="audit_superuser_before")
def superuser_before(sender, instance, update_fields=None, raw=False, **kwargs) -> None:
    if raw or instance.pk is None or (update_fields is not None and "is_superuser" not in update_fields):
        return  # a login's last_login save does not touch roles: no extra query
    instance._audit_was_superuser = User.objects.filter(pk=instance.pk).values_list("is_superuser", flat=True).first()


@receiver(post_save, sender=User, dispatch_uid="audit_superuser_after")
def superuser_after(sender, instance, created, raw=False, **kwargs) -> None:
    was = instance.__dict__.pop("_audit_was_superuser", None)
    if raw:
        return
    if created and instance.is_superuser:
        audit_record(action="role.add", target=_user_target(instance), detail={"superuser": True})
    elif was is not None and was != instance.is_superuser:
        verb = "role.add" if instance.is_superuser else "role.remove"
        audit_record(action=verb, target=_user_target(instance), detail={"superuser": instance.is_superuser})


def _user_target(user) -> tuple[str, int, str]:
    return ("user", user.pk, f"user #{user.pk} {user.get_username()}")
