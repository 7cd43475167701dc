"""The data folder and what the app writes there are the app's own: 0700 and 0600."""

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def migrate(data: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RYSH_DATA_DIR": str(data)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DATABASE_URL", None)  # the embedded SQLite database is what is checked
    return subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),  # a usual login shell's umask, whatever this process has
    )


def test_migrate_leaves_a_private_data_folder_and_database(tmp_path):
    data = tmp_path / "fresh"
    done = migrate(data)
    assert done.returncode == 0, done.stdout + done.stderr
    assert mode(data) == 0o700
    for name in ("db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm", "secret_key"):
        if (data / name).exists():  # WAL and SHM go when the last connection closes
            assert mode(data / name) & 0o077 == 0, f"{name} is {oct(mode(data / name))}"
    assert (data / "db.sqlite3").exists() and mode(data / "static") == 0o700


def test_an_older_open_data_folder_is_closed(tmp_path):
    data = tmp_path / "old"
    data.mkdir()
    data.chmod(0o755)
    done = migrate(data)
    assert done.returncode == 0, done.stdout + done.stderr
    assert mode(data) == 0o700
    assert mode(data / "db.sqlite3") & 0o077 == 0
