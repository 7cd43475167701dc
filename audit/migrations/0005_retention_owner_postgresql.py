"""No database session can empty the audit log on PostgreSQL. Migration 0004 let a DELETE through
when the session itself named a cut-off (`set_config('rysh.audit_prune_before', …)`), so any role
that could delete rows could delete them all. Now the cut-off is the retention kept by the tables'
owner (the role running migrations), where no other role can change it:

- `audit_retention_days()`: a function returning RYSH_KEEP_AUDIT_DAYS (NULL: kept forever). Only
  its owner may replace a function — not a role given every privilege on every table and
  function — and the owner rewrites it after every `migrate` (audit/retention.py).
- `audit_retention_cutoff()`: now() minus those days.
- the append-only trigger lets a DELETE through only for a row older than that cut-off. Each
  function runs under a fixed search path and names the others by their schema, so a session's
  look-alike function or temporary table earlier on its own search path is never what it reads.
- TRUNCATE, which no row trigger sees, is refused to every role but the table's owner (and its
  members): a role granted every privilege cannot empty the log with it; the test runner, which
  empties tables as the owner, still can.

SQLite has no trigger: the model and its manager refuse there (see 0002)."""

from importlib import import_module

from django.conf import settings
from django.db import migrations

previous = import_module("audit.migrations.0004_retention_delete_postgresql")  # the body to go back to

TRIGGER = """
CREATE OR REPLACE FUNCTION {s}.audit_auditentry_append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    prune_before timestamptz;
BEGIN
    -- a deleted user's rows keep their name: Django clears actor_id and nothing else
    IF TG_OP = 'UPDATE' AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
       AND to_jsonb(NEW) - 'actor_id' = to_jsonb(OLD) - 'actor_id' THEN
        RETURN NEW;
    END IF;
    -- retention: a row older than the retention only the owner sets
    IF TG_OP = 'DELETE' THEN
        prune_before := {s}.audit_retention_cutoff();
        IF prune_before IS NOT NULL AND OLD.at < prune_before THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: % of audit_auditentry refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$
"""

# `days` is written in by audit/retention.py as a literal whole number or NULL
RETENTION_DAYS = """
CREATE OR REPLACE FUNCTION {s}.audit_retention_days() RETURNS integer
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$ SELECT {days}::integer $$
"""

TRUNCATE = """
CREATE FUNCTION {s}.audit_auditentry_truncate_owner_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: TRUNCATE of audit_auditentry refused (only its owner may)'
        USING ERRCODE = 'restrict_violation';
END;
$$
"""

FORWARD = [
    RETENTION_DAYS,
    """
CREATE FUNCTION {s}.audit_retention_cutoff() RETURNS timestamptz
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT now() - make_interval(days => {s}.audit_retention_days())
$$
""",
    TRIGGER,
    TRUNCATE,
    """
CREATE TRIGGER audit_auditentry_truncate_owner_only BEFORE TRUNCATE ON {s}.audit_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.audit_auditentry_truncate_owner_only()
""",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_auditentry_truncate_owner_only ON {s}.audit_auditentry",
    "DROP FUNCTION IF EXISTS {s}.audit_auditentry_truncate_owner_only()",
    previous.FORWARD[0],
    "DROP FUNCTION IF EXISTS {s}.audit_retention_cutoff()",
    "DROP FUNCTION IF EXISTS {s}.audit_retention_days()",
]


def _run(statements: list[str]):
    def run(apps, schema_editor) -> None:
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_schema()")
            schema = connection.ops.quote_name(cursor.fetchone()[0])
            for statement in statements:
                days = str(settings.RYSH_KEEP_AUDIT_DAYS or "NULL")  # a whole number: envint
                cursor.execute(statement.replace("{s}", schema).replace("{days}", days))

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_retention_delete_postgresql")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
