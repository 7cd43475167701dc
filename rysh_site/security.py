"""Keep what the app writes to itself: a 077 umask for the process and a private data folder.

The data folder holds the database (sessions, users' hashes), its WAL/SHM files, the secret key,
the demo logins, results, screenshots and browser profiles. Another local user must read none.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

PRIVATE_UMASK = 0o077  # new files 0600, new folders 0700


def restrict_umask() -> None:
    """Make every file this process (and its children: git, Chromium, SQLite) creates private.

    Called from settings, the one module every process of the app imports before it writes
    anything (manage.py's commands, daphne through asgi, qcluster, scripts, tests); a umask set
    in manage.py and asgi.py only would miss `python -m django` and the scripts.
    """
    os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> Path:
    """Create `path` (mode 0700), or take group and others' access from an existing one."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        try:
            os.chmod(path, 0o700)  # an older install made it 0755; closing it hides all inside
        except PermissionError as exc:
            raise ImproperlyConfigured(
                f"the data folder {path} is open to other users and not ours to close: {exc}"
            ) from exc
    return path
