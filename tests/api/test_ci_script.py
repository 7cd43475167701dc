"""Done when: a CI script with an `operate` token starts a run, waits, and reads its verdict
over the API — scripts/rysh-ci.py (the manual's CI example) against a live daphne and a real
qcluster worker, on the offline scripted model (the demo's reading-list recipe)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.stack import Stack

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "rysh-ci.py"
MAKE_TOKEN = """
from django.contrib.auth.models import Group, User
from api.services import token_create
bot = User.objects.create_user("ci-bot")
bot.groups.add(Group.objects.get_or_create(name="operator")[0])
viewer = User.objects.create_user("watcher")
print(json.dumps([token_create(owner=u, name="ci", scopes=["operate"], days=7, by=u).secret for u in (bot, viewer)]))
"""


@pytest.fixture(scope="module")
def live():
    stack = Stack(workers=1)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


def ci(live: Stack, token: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RYSH_URL": live.url, "RYSH_TOKEN": token}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--every", "0.5", "--timeout", "120"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_ci_script_with_an_operate_token_starts_a_run_waits_and_reads_its_verdict(live):
    operator_token, viewer_token = live.query(MAKE_TOKEN)
    done = ci(live, operator_token, "task", "reading-list", "distributed systems")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("run #") and lines[0].endswith("queued: task/reading-list")
    assert "  pass 1: NO " in done.stdout and "  pass 2: YES " in done.stdout
    assert lines[-1].startswith("run #") and " finished: fulfilled (" in lines[-1]
    audit = live.query("""
        from audit.models import AuditEntry
        e = AuditEntry.objects.get(action="run.start")
        print(json.dumps([e.actor_name, e.source]))""")
    assert audit == ["ci-bot via API token ci", "api"]

    refused = ci(live, viewer_token, "task", "reading-list", "owls")  # a viewer's operate token
    assert refused.returncode == 1
    assert "403 role: watcher's role (viewer) cannot operate: it needs the admin or operator role" in refused.stderr
