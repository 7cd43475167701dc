"""Retention of the coding loops' dependency caches (workspaces/caches.py): a cache no run used
for RYSH_KEEP_CACHES_DAYS goes, one used lately or whose repository has a run not finished
stays; the Storage page lists them."""

from __future__ import annotations

import io
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from audit.models import AuditEntry
from ops import retention
from runs.models import RunState
from tests.ops.factory import make_runs
from tests.runs.test_view_runs import client_for, user_with
from workspaces.caches import cache_for, cache_key
from workspaces.models import Workspace, WorkspaceState

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def caches_root(settings, tmp_path):
    settings.RYSH_CACHES_DIR = tmp_path / "caches"
    settings.RYSH_WORKSPACES_DIR = tmp_path / "workspaces"
    settings.RYSH_KEEP_CACHES_DAYS = 30
    return settings.RYSH_CACHES_DIR


def used(source: str, *, days_ago: float, size: int = 1000) -> Path:
    """A cache with one pip file in it, last used `days_ago`."""
    cache = cache_for(source)
    cache.prepare(source)
    (cache.root / "pip" / "wheel").write_bytes(b"w" * size)
    when = (timezone.now() - timedelta(days=days_ago)).timestamp()
    os.utime(cache.root / "last-used", (when, when))
    return cache.root


def test_it_prunes_the_caches_nobody_used_for_their_days(settings):
    old = used("/srv/git/old-app", days_ago=40, size=5000)
    recent = used("/srv/git/recent-app", days_ago=2)
    busy = used("https://git.example/team/busy-app.git", days_ago=40)
    paused = make_runs(1, ended=None, state=RunState.PAUSED, tag="busy")[0]
    Workspace.objects.create(
        run=paused, state=WorkspaceState.ACTIVE, home="/nowhere", source="https://git.example/team/busy-app.git"
    )
    plan = {k.key: k for k in retention.retention_plan()}
    assert plan["caches"].settings == [("RYSH_KEEP_CACHES_DAYS", 30)]
    assert plan["caches"].due.files == 3 and plan["caches"].due.file_bytes == (old / "pip/wheel").stat().st_size + len(
        (old / "repository.json").read_bytes()
    )
    out = io.StringIO()
    call_command("prune", stdout=out)
    assert "Dependency caches of coding loops: removed 0 row(s) (~0 bytes) and 3 file(s)" in out.getvalue()
    assert not old.exists() and recent.exists() and busy.exists()
    assert not any(p.name.startswith(".pruning-") for p in settings.RYSH_CACHES_DIR.iterdir())
    entry = AuditEntry.objects.get(action="retention.prune")
    assert entry.detail["caches"][
        "files"
    ] == 3 and "dependency caches: 0 row(s), 3 file(s)" in retention.last_prune_text(entry)


def test_zero_days_keeps_them_all(settings):
    old = used("/srv/git/old-app", days_ago=400)
    settings.RYSH_KEEP_CACHES_DAYS = 0
    retention.retention_prune()
    assert old.exists()
    assert (
        "Dependency caches of coding loops: kept forever (RYSH_KEEP_CACHES_DAYS=0)"
        in retention.retention_prune(dry_run=True).lines()
    )


def test_the_storage_page_lists_each_cache_with_its_repository():
    used("/srv/git/old-app", days_ago=40, size=2048)
    page = client_for(user_with("admin")).get("/operations/storage/").content.decode()
    assert 'id="kind-caches"' in page and "RYSH_KEEP_CACHES_DAYS</code>=30" in page
    assert 'id="storage-caches"' in page and "/srv/git/old-app" in page and cache_key("/srv/git/old-app") in page


def test_a_cache_key_is_readable_and_unique_per_repository():
    assert cache_key("/srv/git/app").startswith("app-") and cache_key("https://h/x/app.git").startswith("app-")
    assert cache_key("/srv/git/app") != cache_key("/home/me/app")
    assert cache_key("/").startswith("repository-")
