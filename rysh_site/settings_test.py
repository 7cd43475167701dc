"""Test settings: the embedded default, with a throwaway data directory."""

import os
import tempfile

os.environ.setdefault("RYSH_DATA_DIR", tempfile.mkdtemp(prefix="rysh-test-"))

from rysh_site.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not SQLite's shared-cache memory database: tests whose threads write at once (a
    # person answering an approval while the engine waits) need the busy timeout and WAL of the
    # real thing; shared cache fails them at once with "database table is locked".
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}  # noqa: F405

# The tests' webhook receivers listen on loopback, which deliveries refuse unless allowed by name
# (RYSH_NOTIFY_ALLOW_HOSTS, empty by default); the tests of that refusal set it back to [].
RYSH_NOTIFY_ALLOW_HOSTS = ["127.0.0.1", "localhost"]
