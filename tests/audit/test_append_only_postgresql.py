"""On PostgreSQL the database itself keeps the audit log append-only (docs/retention.md): a
trigger refuses every UPDATE and DELETE of audit_auditentry that does not go through the model
— raw SQL, a shell, a script — but for clearing actor_id alone, which deleting a user does."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction

from audit.models import AuditEntry
from audit.services import audit_record

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.scaleout


@pytest.fixture
def migrated(postgres_url, tmp_path):
    """A fresh PostgreSQL database migrated by `manage.py migrate`, as a team would."""
    name = f"rysh_audit_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    yield url, lambda *args: _manage(url, tmp_path, *args)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(url: str, data_dir: Path, *args: str, env: dict | None = None) -> str:
    env = {**os.environ, "DATABASE_URL": url, "RYSH_DATA_DIR": str(data_dir), **(env or {})}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the project's own settings, as manage.py sets them
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def refused(conn, sql: str) -> str:
    with pytest.raises(psycopg.errors.RestrictViolation) as caught:
        conn.execute(sql)
    conn.rollback()
    return str(caught.value)


def test_a_migrated_database_refuses_updates_and_deletes_of_audit_rows(migrated):
    url, manage = migrated
    manage("migrate", "--noinput")
    manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from audit.services import audit_record; "
        "u = User.objects.create_user('bob'); audit_record(actor=u, action='run.stop', target=('run', 7, 'run #7'))",
    )
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT id, actor_id FROM audit_auditentry WHERE action = 'run.stop'").fetchone()
        assert row[1] is not None
        said = refused(conn, f"UPDATE audit_auditentry SET action = 'run.start' WHERE id = {row[0]}")
        assert "audit entries are append-only: UPDATE of audit_auditentry refused" in said
        refused(conn, f"UPDATE audit_auditentry SET actor_id = NULL, actor_name = 'eve' WHERE id = {row[0]}")
        assert "DELETE of audit_auditentry refused" in refused(conn, "DELETE FROM audit_auditentry")
        assert conn.execute("SELECT action, actor_name FROM audit_auditentry WHERE id = %s", (row[0],)).fetchone() == (
            "run.stop",
            "bob",
        )
    # deleting the user (Django sets actor_id NULL) still works, and the row keeps the name
    manage("shell", "-c", "from django.contrib.auth.models import User; User.objects.get(username='bob').delete()")
    with psycopg.connect(url) as conn:
        assert conn.execute(
            "SELECT actor_id, actor_name, action FROM audit_auditentry WHERE id = %s", (row[0],)
        ).fetchone() == (
            None,
            "bob",
            "run.stop",
        )
    manage("migrate", "audit", "0001", "--noinput")  # going back drops the trigger
    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM audit_auditentry")
        assert conn.execute("SELECT COUNT(*) FROM audit_auditentry").fetchone() == (0,)


@pytest.mark.django_db
def test_it_refuses_raw_sql_on_the_test_database_when_it_is_postgresql():
    """Under scripts/scaleout_tests.py the test database itself is PostgreSQL, migrated."""
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's; on SQLite the model and its manager refuse")
    bob = User.objects.create_user("bob")
    entry = audit_record(actor=bob, action="run.stop", target=("run", 7, "run #7 task/notes"))
    table = AuditEntry._meta.db_table
    for sql in (f"UPDATE {table} SET action = 'run.start' WHERE id = %s", f"DELETE FROM {table} WHERE id = %s"):
        with pytest.raises(IntegrityError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [entry.pk])
    bob.delete()
    entry = AuditEntry.objects.get(pk=entry.pk)
    assert (entry.actor, entry.actor_name, entry.action) == (None, "bob", "run.stop")
