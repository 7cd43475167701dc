"""Retention may remove audit rows past RYSH_KEEP_AUDIT_DAYS (ops/retention.py), and nothing else
may: on PostgreSQL the append-only trigger (migration 0002) now lets a DELETE through only when
its transaction named a cut-off (`set_config('rysh.audit_prune_before', <timestamp>, true)`, local
to the transaction) and the row is older than it. Every UPDATE but the user-deletion one, and
every other DELETE, is still refused."""

from importlib import import_module

from django.db import migrations

base = import_module("audit.migrations.0002_append_only_postgresql")  # its RunSQL class and first body

FORWARD = [
    """
CREATE OR REPLACE FUNCTION audit_auditentry_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    prune_before timestamptz := NULLIF(current_setting('rysh.audit_prune_before', true), '')::timestamptz;
BEGIN
    -- a deleted user's rows keep their name: Django clears actor_id and nothing else
    IF TG_OP = 'UPDATE' AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
       AND to_jsonb(NEW) - 'actor_id' = to_jsonb(OLD) - 'actor_id' THEN
        RETURN NEW;
    END IF;
    -- retention: a row older than the cut-off its transaction named
    IF TG_OP = 'DELETE' AND prune_before IS NOT NULL AND OLD.at < prune_before THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: % of audit_auditentry refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$
""",
]
BACKWARD = [base.FORWARD[0]]


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_api_source")]

    operations = [base.RunSQLOnPostgreSQL(FORWARD, BACKWARD)]
