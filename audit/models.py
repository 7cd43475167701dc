"""AuditEntry: one append-only row per action a person takes.

Action codes (`<entity>.<verb>`, short, stable: filters match them by prefix):

- runs: `run.start`, `run.stop`, `run.cancel`, `run.continue`, `run.resume` (the target is the
  new run; `detail.resumes` names the old one), `run.land`, `run.grant`
- re-judges: `rejudge.start` (a proposed judge over past results; `detail.change` when from a
  change request)
- approvals: `approval.approve`, `approval.reject` (the target is the run; `detail.approval`)
- verdict labels: `verdict.label`, `verdict.unlabel` (the target is the run; `detail.pass`,
  `detail.judge` right | wrong, `detail.note`, `detail.was`: the label it replaced)
- browser profiles: `profile.delete`
- schedules: `schedule.add`, `schedule.enable`, `schedule.disable`, `schedule.remove`
- recipes and change requests: `recipe.save` (a change proposed — create, edit, rename,
  delete — or revised; `detail.change_action`), `change.approve`, `change.close`,
  `change.comment`, `change.request_changes`
- roles: `role.add`, `role.remove` (groups, or `superuser`, on a user)
- users: `user.create`, `user.deactivate`, `user.activate`, `user.delete` (`detail.groups`: the
  groups the user was in)
- groups (roles are group names): `group.create`, `group.rename` (`detail.from`, `detail.to`,
  `detail.members`), `group.delete` (`detail.members`: who lost it)
- logins: `auth.login`, `auth.logout`, `auth.login_failed` (no actor; `detail.username`: the name
  tried, never the password; `detail.locked_out`: this failure reached the throttle's limit —
  attempts the throttle refused unchecked write nothing); company logins (accounts/) say
  `detail.via: oidc` (a refused one `detail.reason`, and `detail.subject` when the provider named
  somebody), and `auth.groups_missing` says a login came without the groups claim
  (`detail.claim`, `detail.removed`: the mapped roles it took); the provider's role changes are
  `role.add` / `role.remove` with the actor name `oidc:<issuer host>`
- notification channels: `notify.channel.add`, `notify.channel.change`, `notify.channel.remove`,
  `channel.test` ("Send test"; `detail.delivery`)
- the catalogue: `recipes.sync` (the Sync button; `detail.head`, `changed`, `versions`, or
  `detail.error` when git failed)

Rows are never edited or deleted by the app: `save()` of a stored row, `delete()`, and the
manager's `update()` / `delete()` all raise AppendOnly. Deleting a user keeps their rows
(actor becomes NULL through Django's base manager, actor_name stays). On PostgreSQL the
database itself refuses any other UPDATE and every DELETE (a trigger: migration 0002).

- API tokens: `token.create`, `token.revoke` (the target is the token; `detail.owner`,
  `detail.scopes`)

Actions nobody pressed (a schedule's tick, a schedule disabled after failures, a run woken when
its quota has room) have the source `system` and no actor.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.utils import timezone


class AppendOnly(Exception):
    """An audit row was about to be changed or removed."""


class Source(models.TextChoices):
    WEB = "web", "web"
    CLI = "cli", "CLI"
    API = "api", "API"  # a REST API call with a token; actor_name says `<owner> via API token <name>`
    SYSTEM = "system", "system"  # no person's request or command: a worker, a shell


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnly("audit entries cannot be changed")

    def bulk_update(self, objs, fields, batch_size=None):
        raise AppendOnly("audit entries cannot be changed")

    def delete(self):
        raise AppendOnly("audit entries cannot be deleted")

    def _raw_delete(self, using):
        raise AppendOnly("audit entries cannot be deleted")


class AuditEntry(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)  # kept when the user is deleted
    action = models.CharField(max_length=60, db_index=True)
    target_type = models.CharField(max_length=40, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_label = models.CharField(max_length=300, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices)
    address = models.GenericIPAddressField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id"], name="audit_target")]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.target_label}".rstrip()

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding or kwargs.get("update_fields") or kwargs.get("force_update"):
            raise AppendOnly("audit entries cannot be changed")
        # an INSERT always: a new object given a stored row's id fails instead of overwriting it
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("audit entries cannot be deleted")

    @property
    def detail_text(self) -> str:
        return json.dumps(self.detail, sort_keys=True, ensure_ascii=False) if self.detail else ""
