"""On PostgreSQL no database session can empty the audit log (docs/retention.md): the append-only
trigger lets a DELETE through only for rows older than the retention the tables' owner keeps in
`audit_retention_days()`, a function only its owner can change — never for a cut-off the session
names itself. Tested with a limited role, as a second application or a person with a database
login would be: even one granted every privilege on every table and function."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.audit.test_append_only_postgresql import _manage, migrated, refused  # noqa: F401

pytestmark = pytest.mark.scaleout

INSERT = (
    "INSERT INTO audit_auditentry (at, actor_name, action, target_type, target_id, target_label, source, detail) "
    "VALUES (now() - make_interval(days => %s), '', %s, '', '', '', 'cli', '{}') RETURNING id"
)


@pytest.fixture
def limited(migrated, postgres_url):
    """A login role that may read, add and delete audit rows (no more): its URL."""
    url, manage = migrated
    manage("migrate", "--noinput")
    role = f"rysh_limited_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        conn.execute(f"GRANT ALL ON ALL FUNCTIONS IN SCHEMA public TO {role}")
        conn.execute(f"GRANT CREATE, TEMPORARY ON DATABASE {url.rsplit('/', 1)[1]} TO {role}")
    yield url.replace("postgres@", f"{role}@", 1)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
        conn.execute(f"DROP ROLE IF EXISTS {role}")


def rows(url: str) -> set[int]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM audit_auditentry WHERE action LIKE 'run.%'")}


def test_a_limited_role_cannot_empty_the_audit_log_with_a_cut_off_of_its_own(migrated, limited):
    url, manage = migrated
    with psycopg.connect(url, autocommit=True) as conn:
        young = {conn.execute(INSERT, (days, "run.stop")).fetchone()[0] for days in (0, 10, 700)}
    with psycopg.connect(limited) as conn:
        # the old way round: a cut-off the session sets for itself
        conn.execute("SELECT set_config('rysh.audit_prune_before', 'infinity', true)")
        assert "DELETE of audit_auditentry refused" in refused(conn, "DELETE FROM audit_auditentry")
        # the retention is the owner's function: no other role may change it, and a look-alike
        # function earlier on the session's search path is not what the trigger calls
        for name in ("audit_retention_days() RETURNS integer", "audit_retention_cutoff() RETURNS timestamptz"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner"):
                conn.execute(f"CREATE OR REPLACE FUNCTION public.{name} LANGUAGE sql AS $$ SELECT NULL $$")
            conn.rollback()
        conn.execute("CREATE SCHEMA mine")
        conn.execute("CREATE FUNCTION mine.audit_retention_days() RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$")
        conn.execute(
            "CREATE FUNCTION mine.audit_retention_cutoff() RETURNS timestamptz LANGUAGE sql "
            "AS $$ SELECT 'infinity'::timestamptz $$"
        )
        conn.execute("SET search_path = mine, pg_temp, public")
        assert "DELETE of audit_auditentry refused" in refused(conn, "DELETE FROM public.audit_auditentry")
        # TRUNCATE, which no row trigger sees: the owner's alone
        assert "TRUNCATE of audit_auditentry refused" in refused(conn, "TRUNCATE public.audit_auditentry")
        assert "TRUNCATE of audit_auditentry refused" in refused(conn, "TRUNCATE auth_user CASCADE")
    assert rows(url) == young


def test_the_prune_still_removes_what_is_past_the_retention_and_only_that(migrated, limited):
    url, manage = migrated
    with psycopg.connect(url, autocommit=True) as conn:
        old = conn.execute(INSERT, (800, "run.start")).fetchone()[0]
        young = conn.execute(INSERT, (10, "run.stop")).fetchone()[0]
        assert conn.execute("SELECT audit_retention_days()").fetchone() == (730,)
    assert "Audit log: removed 1 row(s)" in manage("prune")
    assert rows(url) == {young}
    # a row past the retention is due: anyone who may delete rows may delete it, no younger one
    with psycopg.connect(url, autocommit=True) as conn:
        older = conn.execute(INSERT, (731, "run.cancel")).fetchone()[0]
    with psycopg.connect(limited) as conn:
        conn.execute(f"DELETE FROM audit_auditentry WHERE id = {older}")
        conn.commit()
        assert "refused" in refused(conn, f"DELETE FROM audit_auditentry WHERE id = {young}")
    assert rows(url) == {young}
    assert old not in rows(url)


def test_the_retention_follows_the_setting_each_migrate_and_keeps_forever_at_zero(migrated, tmp_path):
    url, _ = migrated
    env = {"RYSH_KEEP_AUDIT_DAYS": "0"}
    _manage(url, tmp_path, "migrate", "--noinput", env=env)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT audit_retention_days()").fetchone() == (None,)
        old = conn.execute(INSERT, (5000, "run.start")).fetchone()[0]
    with psycopg.connect(url) as conn:
        assert "refused" in refused(conn, f"DELETE FROM audit_auditentry WHERE id = {old}")
    _manage(url, tmp_path, "migrate", "--noinput", env={"RYSH_KEEP_AUDIT_DAYS": "30"})
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT audit_retention_days()").fetchone() == (30,)
