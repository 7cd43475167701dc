"""A database made by `main` before the apps split migrates without losing a row."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LEGACY_TABLES = [
    "automations_repostate",
    "automations_recipe",
    "automations_recipeversion",
    "automations_changerequest",
    "automations_reviewcomment",
    "automations_run",
    "automations_pass",
    "automations_step",
    "automations_runevent",
    "automations_approval",
    "automations_recipeschedule",
    "budgets_ledgerentry",
]


def manage(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "RYSH_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "rysh_site.settings"}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def query(data_dir: Path, code: str):
    """Run Django code against that database in a fresh process; it prints JSON."""
    return json.loads(manage(data_dir, "shell", "-c", code).stdout.strip().splitlines()[-1])


@pytest.fixture
def legacy(tmp_path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(HERE / "main-6c303b9.sqlite3.gz") as packed, open(data / "db.sqlite3", "wb") as out:
        shutil.copyfileobj(packed, out)
    shutil.copy(HERE / "secret_key", data / "secret_key")
    return data


NEW_TABLES = ["runs_message"]
MOVED = {"automations_pass": "messages"}  # a column whose values moved to another table
# columns added since: empty on every old row
ADDED = {
    "automations_recipeschedule": ("owner_id",),
    "automations_run": ("snapshots_pruned_at", "forked_from_id", "fork_pass", "package_version_id", "chain_parent_id"),
    "automations_pass": ("snapshot_at", "gate_status"),
    "automations_step": ("parent_step_id",),
    "budgets_ledgerentry": ("rejudge_id",),
}
# columns added since with a default: the default on every old row
DEFAULTED = {
    "automations_step": {"thinking_blocks": 0, "thinking": "", "agent": ""},
    "automations_run": {
        "trace_context": "{}",
        "fork_redo": 0,
        "fork_edits": "{}",
        "package": "",
        "policy": "{}",
        "chain_depth": 0,
    },
    "automations_pass": {"gate_command": "", "gate_output": ""},
}
# columns added since and filled from what was there: whose quota counted a run's calls (its
# starter's, until a person continues or grants it), and the slot a run holds (its target)
FILLED = {"automations_run": ("charged_to_id", "slot"), "budgets_ledgerentry": ("charged_to_id",)}


def dump(db: Path) -> dict[str, list]:
    """Every row of every legacy table, by column name, but for the columns that moved."""
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {
            t: [
                {
                    k: row[k]
                    for k in row.keys()
                    if k != MOVED.get(t)
                    and k not in ADDED.get(t, ())
                    and k not in FILLED.get(t, ())
                    and k not in DEFAULTED.get(t, {})
                }
                for row in con.execute(f'SELECT * FROM "{t}" ORDER BY id')
            ]
            for t in LEGACY_TABLES
        }


def legacy_conversations(db: Path) -> dict[int, list]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT id, messages FROM automations_pass ORDER BY id")
        return {pk: json.loads(messages) for pk, messages in rows}


def conversations(db: Path) -> dict[int, list]:
    """Each pass's conversation rebuilt from its message rows, in order, as the engine loads it."""
    found: dict[int, list] = {}
    with sqlite3.connect(db) as con:
        for (pk,) in con.execute("SELECT id FROM automations_pass ORDER BY id"):
            found[pk] = [
                {"role": role, "content": json.loads(content)}
                for role, content in con.execute(
                    'SELECT role, content FROM runs_message WHERE run_pass_id = ? ORDER BY "index"', (pk,)
                )
            ]
    return found


def columns(db: Path) -> dict[str, set]:
    with sqlite3.connect(db) as con:
        return {
            t: {(c[1], c[2], c[3], c[5]) for c in con.execute(f'PRAGMA table_info("{t}")')}
            for t in [*LEGACY_TABLES, *NEW_TABLES]
        }


def indexes(db: Path) -> set:
    with sqlite3.connect(db) as con:
        return {
            (name, table, sql)
            for name, table, sql in con.execute(
                "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
            if table in [*LEGACY_TABLES, *NEW_TABLES]
        }


def test_it_keeps_every_row_and_the_schema_of_a_database_made_before_the_split(legacy, tmp_path):
    before = dump(legacy / "db.sqlite3")
    talk = legacy_conversations(legacy / "db.sqlite3")
    assert len(before["automations_step"]) == 17 and len(before["budgets_ledgerentry"]) == 17
    assert [len(m) for m in talk.values()] == [26, 4]  # two passes' conversations to carry
    manage(legacy, "migrate", "--noinput")
    assert dump(legacy / "db.sqlite3") == before  # every row, every value (but the moved column)
    with sqlite3.connect(legacy / "db.sqlite3") as con:
        for table, added in ADDED.items():
            for column in added:
                assert con.execute(f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" IS NOT NULL').fetchone() == (0,)
        for table, defaults in DEFAULTED.items():
            for column, value in defaults.items():
                assert con.execute(
                    f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" IS NOT ?', (value,)
                ).fetchone() == (0,)
    assert conversations(legacy / "db.sqlite3") == talk  # the moved column, turn for turn
    with sqlite3.connect(legacy / "db.sqlite3") as con:
        runs = con.execute("SELECT COUNT(*), COUNT(user_id) FROM automations_run").fetchone()
        assert runs[1] > 0 and con.execute(
            "SELECT COUNT(*) FROM automations_run WHERE charged_to_id IS user_id"
        ).fetchone() == (runs[0],)
        assert con.execute(
            "SELECT COUNT(*) FROM budgets_ledgerentry e JOIN automations_run r ON r.id = e.run_id "
            "WHERE e.charged_to_id IS NOT r.user_id"
        ).fetchone() == (0,)
        assert con.execute("SELECT COUNT(*) FROM automations_run WHERE slot IS NOT target").fetchone() == (0,)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    manage(fresh, "migrate", "--noinput")
    assert columns(legacy / "db.sqlite3") == columns(fresh / "db.sqlite3")
    assert indexes(legacy / "db.sqlite3") == indexes(fresh / "db.sqlite3")
    assert manage(legacy, "makemigrations", "--check", "--dry-run", check=False).returncode == 0


def test_it_moves_the_conversations_back_when_migrated_back(legacy):
    talk = legacy_conversations(legacy / "db.sqlite3")
    manage(legacy, "migrate", "--noinput")
    manage(legacy, "migrate", "runs", "0002_task_paths", "--noinput")
    assert legacy_conversations(legacy / "db.sqlite3") == talk


def test_the_models_read_the_adopted_rows_and_queued_work_finds_its_new_entry_points(legacy):
    manage(legacy, "migrate", "--noinput")
    seen = query(
        legacy,
        (
            "import json\n"
            "from django_q.models import OrmQ, Schedule\n"
            "from runs.models import Run\n"
            "from reviews.models import ChangeRequest\n"
            "from schedules.models import RecipeSchedule\n"
            "run = Run.objects.get()\n"
            "print(json.dumps({'run': [run.state, run.cause, run.recipe.target, run.passes.count(),\n"
            "   sum(p.steps.count() for p in run.passes.all()), run.ledger.count(), run.events.count(),\n"
            "   run.approvals.count()],\n"
            " 'turns': [len(p.messages) for p in run.passes.order_by('number')],\n"
            " 'change': [c.comments.count() for c in ChangeRequest.objects.all()],\n"
            " 'schedule': [s.q.func for s in RecipeSchedule.objects.all()],\n"
            " 'funcs': sorted(Schedule.objects.values_list('func', flat=True)),\n"
            " 'queued': [q.task['func'] for q in OrmQ.objects.all()]}))\n"
        ),
    )
    assert seen == {
        "run": ["finished", "fulfilled", "task/reading-list", 2, 17, 17, 27, 1],
        "turns": [26, 4],
        "change": [1],
        "schedule": ["schedules.tasks.scheduled_run"],
        "funcs": [  # the hourly clearsessions and the daily retention prune are added on migrate
            "catalogue.tasks.sync_task",
            "django.core.management.call_command",
            "ops.retention.prune_scheduled",
            "runs.worker.sweep_lost_runs",
            "schedules.tasks.scheduled_run",
        ],
        "queued": ["runs.worker.execute_run"],
    }


def test_a_database_part_way_through_the_old_migrations_is_refused_with_what_to_do(legacy):
    with sqlite3.connect(legacy / "db.sqlite3") as con:
        con.execute("DELETE FROM django_migrations WHERE app = 'automations' AND name = '0005_schedules'")
    failed = manage(legacy, "migrate", "--noinput", check=False)
    assert failed.returncode != 0
    assert "automations 0005_schedules" in failed.stderr and "git 6c303b9" in failed.stderr
