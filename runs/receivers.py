"""What runs does when other apps' signals fire (connected in apps.ready()).

Runs paused on a quota are woken when spend says room may have come (spend sits below runs and
cannot continue a run itself); what happens to a run's working copy is noted on its page.

What may change what an open websocket is allowed to see: a logout, a user saved (deactivated,
made or unmade superuser, a new password), deleted, added to or removed from groups, and groups
renamed or deleted (roles are group names). Each tells the live hubs, after the commit, whose
sockets to check again now (runs/events.push_users_changed); the sockets' periodic check covers
what happens where no signal is sent (a session deleted by hand, another process on the embedded
default's in-memory channel layer)."""

from __future__ import annotations

import functools
import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from runs import events
from runs.chains import CHAINING_CAUSES
from runs.events import push_users_changed
from runs.on_success import run_chain_follow
from runs.quota_waits import paused_on_quota, quota_wake
from runs.signals import run_finished
from runs.states import EventKind
from spend.signals import quota_released
from workspaces.signals import workspace_noted

log = logging.getLogger(__name__)

User = get_user_model()
HARMLESS = {"last_login"}  # a login's own save changes nothing a socket may see


@receiver(user_logged_out, dispatch_uid="live_logged_out")
def logged_out(sender, request, user, **kwargs) -> None:
    if user is not None:
        push_users_changed([user.pk])


@receiver(post_save, sender=User, dispatch_uid="live_user_saved")
def user_saved(sender, instance, created, update_fields=None, raw=False, **kwargs) -> None:
    if raw or created or (update_fields is not None and set(update_fields) <= HARMLESS):
        return  # a new user has no socket yet
    push_users_changed([instance.pk])


@receiver(post_delete, sender=User, dispatch_uid="live_user_deleted")
def user_deleted(sender, instance, **kwargs) -> None:
    push_users_changed([instance.pk])


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="live_groups_changed")
def groups_changed(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if not reverse:
        push_users_changed([instance.pk])
    else:  # group.user_set.…: the users named, or (a clear) whoever was in it
        push_users_changed(pk_set if action != "post_clear" else None)


@receiver(post_save, sender=Group, dispatch_uid="live_group_saved")
def group_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if not raw and not created:  # a rename may give or take a role from every member
        push_users_changed(None)


@receiver(post_delete, sender=Group, dispatch_uid="live_group_deleted")
def group_deleted(sender, instance, **kwargs) -> None:
    push_users_changed(None)


@receiver(quota_released, dispatch_uid="runs.quota_released")
def on_quota_released(sender, **kwargs) -> None:
    """Calls settled below what they had reserved, or a quota or price changed: runs waiting on a
    quota may fit now."""
    try:
        if paused_on_quota().exists():
            quota_wake()
    except Exception:  # waking is also the sweeper's job each minute: never fail a settle for it
        log.exception("runs paused on a quota not woken now; the sweeper tries again")


@receiver(workspace_noted, dispatch_uid="runs.workspace_noted")
def on_workspace_noted(sender, run, message, **kwargs) -> None:
    events.record(run, EventKind.NOTE, message)


@receiver(run_finished, dispatch_uid="runs.on_success")
def on_run_finished(sender, *, run, **kwargs) -> None:
    """A run that ended well starts the recipe its on_success names, once its end is committed
    (docs/chains.md)."""
    if run.cause in CHAINING_CAUSES:
        transaction.on_commit(functools.partial(_follow, run.pk))


def _follow(run_id: int) -> None:
    try:
        run_chain_follow(run_id=run_id)
    except Exception:  # the finished run stays finished whatever its chain does; the log says why
        log.exception("run %s: its on_success chain was not followed", run_id)
