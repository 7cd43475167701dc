"""The command line says what is wrong in one line (docs/command-line.md, docs/configuration.md):
no database yet, a malformed setting — never a traceback, and no folder made only to fail in it;
and it prints its own lines, not django-q2's or the HTTP client's."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from runs.models import Run
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DEBUG"):
        environment.pop(name, None)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_auto_without_a_database_says_so_in_one_line_and_makes_no_folder(tmp_path):
    data = tmp_path / "not-made-yet"
    done = manage("auto", "task", "status", cwd=tmp_path, RYSH_DATA_DIR=str(data))
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"manage.py auto: no database at {data / 'db.sqlite3'}: run `python manage.py migrate` first, or point "
        "RYSH_DATA_DIR (or DATABASE_URL) at the dashboard's data"
    ]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not data.exists() and not (tmp_path / ".data").exists()


def test_auto_on_a_database_never_migrated_says_so_in_one_line(tmp_path):
    sqlite3.connect(tmp_path / "db.sqlite3").close()  # a file, no tables
    done = manage("auto", "task", "status", cwd=tmp_path, RYSH_DATA_DIR=str(tmp_path))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "no such table" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"CommandError: the database {tmp_path / 'db.sqlite3'} has no tables yet: run `python manage.py migrate` first"
    ]


@pytest.mark.parametrize(
    "command",
    [["manage.py", "check"], ["manage.py", "auto", "task", "status"], ["-c", "import rysh_site.asgi"]],
)
def test_a_malformed_setting_is_one_line_naming_it_and_what_it_expects(tmp_path, command):
    """manage.py, and the web server's import of the application (what daphne does)."""
    sqlite3.connect(tmp_path / "db.sqlite3").close()
    environment = {**os.environ, "RYSH_DATA_DIR": str(tmp_path), "RYSH_SANDBOX": "maybe"}
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DEBUG"):
        environment.pop(name, None)
    argv = [str(ROOT / command[0]), *command[1:]] if command[0] == "manage.py" else command
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert done.stderr.splitlines() == ["rysh: RYSH_SANDBOX: expected on or off, got 'maybe'"]


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
def test_auto_prints_its_own_lines_not_the_queue_or_the_http_client(fake_anthropic, recipe_file, caplog):  # noqa: F811
    path = recipe_file("Say hello.", "hello", script=None)
    out = StringIO()
    with caplog.at_level(logging.INFO):
        call_command("auto", "task", "run", str(path), "--provider", "anthropic", stdout=out)
    run = Run.objects.get()
    assert f"run #{run.pk} queued" in out.getvalue()
    assert fake_anthropic.models_requests  # the models were asked over HTTP: not the user's business
    said = [record.getMessage() for record in caplog.records]
    assert not [line for line in said if line.startswith(("Enqueued", "HTTP Request"))], said
    # and after the command, the libraries say what they said before
    assert logging.getLogger("django-q").level == logging.NOTSET
