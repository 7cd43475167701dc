"""On PostgreSQL the audit log's trigger refuses every DELETE (audit migration 0002) but of rows
past the retention the tables' owner set (audit_retention, migration 0005): what the prune removes."""

from __future__ import annotations

import psycopg
import pytest

from tests.audit.test_append_only_postgresql import _manage, migrated, refused  # noqa: F401

pytestmark = pytest.mark.scaleout

INSERT = (
    "INSERT INTO audit_auditentry (at, actor_name, action, target_type, target_id, target_label, source, detail) "
    "VALUES (now() - make_interval(days => %s), '', %s, '', '', '', 'cli', '{}') RETURNING id"
)


def test_the_prune_removes_old_audit_rows_and_no_younger_one_can_go(migrated):
    url, manage = migrated
    manage("migrate", "--noinput")
    with psycopg.connect(url, autocommit=True) as conn:
        old = conn.execute(INSERT, (800, "run.start")).fetchone()[0]
        young = conn.execute(INSERT, (10, "run.stop")).fetchone()[0]
    with psycopg.connect(url) as conn:
        assert "DELETE of audit_auditentry refused" in refused(conn, f"DELETE FROM audit_auditentry WHERE id = {young}")
        # a cut-off the session names for itself counts for nothing
        conn.execute("SELECT set_config('rysh.audit_prune_before', 'infinity', true)")
        assert "refused" in refused(conn, f"DELETE FROM audit_auditentry WHERE id = {young}")
    said = manage("prune", "--dry-run")
    assert "Audit log: would remove 1 row(s)" in said
    said = manage("prune")
    assert "Audit log: removed 1 row(s)" in said
    with psycopg.connect(url) as conn:
        ids = {row[0] for row in conn.execute("SELECT id FROM audit_auditentry WHERE action LIKE 'run.%'")}
        assert ids == {young} and old not in ids
        pruned = conn.execute("SELECT detail FROM audit_auditentry WHERE action = 'retention.prune'").fetchone()
        assert pruned[0]["audit"]["rows"] == 1
        assert "refused" in refused(conn, "DELETE FROM audit_auditentry")
