"""Test settings: the embedded default, with a throwaway data directory."""

import os
import tempfile

os.environ.setdefault("RYSH_DATA_DIR", tempfile.mkdtemp(prefix="rysh-test-"))

from rysh_site.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
