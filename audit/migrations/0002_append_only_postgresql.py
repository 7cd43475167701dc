"""Audit rows append-only in the database itself, where the database can say so: on PostgreSQL
a trigger refuses every UPDATE and DELETE of audit_auditentry, whoever sends it (a shell, a
script, a bug that goes around the model's guard). One UPDATE is let through: clearing
actor_id alone, which is what deleting a user does (on_delete=SET_NULL; the row keeps
actor_name). SQLite has no such trigger here: the model and its manager refuse there.

TRUNCATE is not refused (it is no row's change, and the test runner empties tables with it);
the table's owner can drop the trigger — give the app a role that does not own the table if
you need more than that."""

from django.db import migrations

# one statement each (the function's body has semicolons of its own)
FORWARD = [
    """
CREATE OR REPLACE FUNCTION audit_auditentry_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- a deleted user's rows keep their name: Django clears actor_id and nothing else
    IF TG_OP = 'UPDATE' AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
       AND to_jsonb(NEW) - 'actor_id' = to_jsonb(OLD) - 'actor_id' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: % of audit_auditentry refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$
""",
    """
CREATE TRIGGER audit_auditentry_append_only
    BEFORE UPDATE OR DELETE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_auditentry_append_only()
""",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_auditentry_append_only ON audit_auditentry",
    "DROP FUNCTION IF EXISTS audit_auditentry_append_only()",
]


class RunSQLOnPostgreSQL(migrations.RunSQL):
    """RunSQL on PostgreSQL only; nothing on another database (SQLite)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [RunSQLOnPostgreSQL(FORWARD, BACKWARD)]
