"""Writing the audit log: `audit_record`, called by the services where an action happens, so
the web and the CLI share one call. Where the action comes from is read from the context."""

from __future__ import annotations

from typing import Any

from django.db import models

from audit.context import SYSTEM, current
from audit.models import AuditEntry

LABEL_MAX = 300
NAME_MAX = 150


def audit_record(*, actor=None, action: str, target: Any = None, detail: dict | None = None) -> AuditEntry:
    """One row. `actor` is the user who acted when the service knows it; otherwise the
    request's logged-in user, or the CLI's name. `target` is a model instance or a
    (type, id, label) tuple."""
    context = current()
    user = actor if _person(actor) else (context.user if context and _person(context.user) else None)
    target_type, target_id, label = _target(target)
    name = user.get_username() if user else (context.actor_name if context else "")
    if context and context.via:  # the API: the token's owner acted through it
        name = f"{name} via {context.via}"
    return AuditEntry.objects.create(
        actor=user,
        actor_name=name[:NAME_MAX],
        action=action,
        target_type=target_type,
        target_id=target_id,
        target_label=label[:LABEL_MAX],
        source=context.source if context else SYSTEM,
        address=context.address if context else None,
        detail=detail or {},
    )


def _person(user) -> bool:
    return bool(getattr(user, "is_authenticated", False))


def _target(target: Any) -> tuple[str, str, str]:
    if target is None:
        return "", "", ""
    if isinstance(target, models.Model):
        return target._meta.model_name, str(target.pk), str(target)
    kind, pk, label = target
    return str(kind), str(pk), str(label)
