"""The audit log's retention as the database itself keeps it, on PostgreSQL (docs/retention.md).

The append-only trigger lets a DELETE of an audit row through only when the row is older than
`audit_retention_cutoff()`: now() minus `audit_retention_days()` (audit migration 0005). That is a
function, so only its owner — the role that runs the migrations and owns the tables — can change
it: not a session naming a cut-off of its own, not a role granted every privilege on every table
and function. The owner writes the configured RYSH_KEEP_AUDIT_DAYS into it after every
`migrate`, and retention's prune does too when it runs as the owner; run as another role, the
prune removes no more than the database allows, and says so.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connections, transaction

log = logging.getLogger(__name__)

# as audit migration 0005 creates it; `{days}` a whole number or NULL, `{schema}` quoted
RETENTION_DAYS = """
CREATE OR REPLACE FUNCTION {schema}.audit_retention_days() RETURNS integer
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$ SELECT {days}::integer $$
"""


def audit_retention_sync(*, using: str = "default") -> bool:
    """Make the database keep audit rows RYSH_KEEP_AUDIT_DAYS days (0: forever). False when this is
    not PostgreSQL, or this role does not own the function (it keeps what its owner set)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    days = settings.RYSH_KEEP_AUDIT_DAYS or None
    try:
        with transaction.atomic(using=using), connection.cursor() as cursor:
            cursor.execute("SELECT current_schema(), audit_retention_days()")
            schema, kept = cursor.fetchone()
            if kept != days:
                sql = RETENTION_DAYS.format(schema=connection.ops.quote_name(schema), days=int(days or 0) or "NULL")
                cursor.execute(sql)
    except DatabaseError as exc:  # not the owner, or a database migrated back before the function
        log.info("audit retention left as the database has it: %s", str(exc).splitlines()[0])
        return False
    return True


def audit_delete_limit(limit: datetime, *, using: str = "default") -> datetime | None:
    """The cut-off retention's prune deletes audit rows before: `limit`, but on PostgreSQL no
    later than the trigger allows now (None: it allows none)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return limit
    audit_retention_sync(using=using)
    with connection.cursor() as cursor:
        cursor.execute("SELECT audit_retention_cutoff()")
        allowed = cursor.fetchone()[0]
    if allowed is None or allowed < limit - timedelta(minutes=1):
        log.warning(
            "the database keeps audit rows %s, longer than RYSH_KEEP_AUDIT_DAYS (%s days): the prune removes no "
            "more; run `manage.py migrate` as the owner of the tables to bring it in line",
            "forever" if allowed is None else f"newer than {allowed:%Y-%m-%d %H:%M}",
            settings.RYSH_KEEP_AUDIT_DAYS,
        )
    return None if allowed is None else min(limit, allowed)


def audit_retention_on_migrate(sender, using: str = "default", **kwargs) -> None:
    """post_migrate: `migrate` runs as the tables' owner, the one role that may change it."""
    audit_retention_sync(using=using)
