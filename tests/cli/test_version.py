"""`auto --version` prints the dashboard's version (docs/command-line.md), with or without a
database: it reads nothing else."""

from __future__ import annotations

from rysh_site import __version__
from rysh_site.startup import database_missing
from tests.runs.test_cli_rough_edges import manage


def test_it_prints_the_projects_version_not_djangos(tmp_path):
    done = manage("auto", "--version", cwd=tmp_path, RYSH_DATA_DIR=str(tmp_path / "no-data"))
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, __version__, "")


def test_it_asks_for_no_database_for_the_version_only(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    monkeypatch.setenv("RYSH_DATA_DIR", str(tmp_path))
    assert database_missing(["manage.py", "auto", "--version"]) is None
    assert "no database at" in database_missing(["manage.py", "auto", "task", "status"])
