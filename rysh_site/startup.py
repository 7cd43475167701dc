"""What runs before the settings do: where the data folder is, whether the command line's `auto`
has a database to work on, and one line — not a traceback — for a malformed setting.

Nothing here imports the settings: the settings create the data folder, and a command that is
going to fail for want of a database must not create folders first (docs/command-line.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured  # imports no settings

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_SETTINGS = "rysh_site.settings"


def data_dir() -> Path:
    """RYSH_DATA_DIR, else `.data` beside manage.py."""
    return Path(os.environ.get("RYSH_DATA_DIR", str(BASE_DIR / ".data"))).resolve()


def database_missing(argv: list[str]) -> str | None:
    """Why `manage.py auto …` cannot run: the embedded database (SQLite in the data folder) is not
    there. None for any other command, `check`, a PostgreSQL DATABASE_URL, or settings of one's own."""
    if argv[1:2] != ["auto"] or argv[3:4] == ["check"] or os.environ.get("DATABASE_URL"):
        return None  # `auto <kind> check` reads a recipe: it runs anywhere, a recipes repository's CI too
    if "--version" in argv[2:]:
        return None  # `auto --version` reads nothing but the project's version
    if os.environ.get("DJANGO_SETTINGS_MODULE", DEFAULT_SETTINGS) != DEFAULT_SETTINGS:
        return None
    database = data_dir() / "db.sqlite3"
    if database.is_file():
        return None
    return (
        f"no database at {database}: run `python manage.py migrate` first, or point RYSH_DATA_DIR (or "
        "DATABASE_URL) at the dashboard's data"
    )


def one_line_configuration_errors() -> None:
    """An ImproperlyConfigured nobody caught — a malformed setting, named with what it expects
    (rysh_site/env.py) — ends the process with that one line on stderr, not a traceback, whatever
    started it: manage.py, the web server, a worker. DEBUG=true keeps the traceback."""
    previous = sys.excepthook
    if getattr(previous, "one_line", False):
        return

    def hook(kind, value, traceback):
        if issubclass(kind, ImproperlyConfigured) and os.environ.get("DEBUG") != "true":
            print(f"rysh: {value}", file=sys.stderr)
            return
        previous(kind, value, traceback)

    hook.one_line = True
    sys.excepthook = hook
