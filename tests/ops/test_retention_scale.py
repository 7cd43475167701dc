"""Retention at scale (docs/retention.md): a prune of a database holding 10,000 old runs keeps every summary page
and quota right, and frees the space it says (files exactly; rows by the stated estimate)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.db.models import Count, Sum
from django.utils import timezone

from audit.models import AuditEntry
from catalogue.models import GitDelivery
from notify.models import Channel, Delivery
from ops import retention
from runs import selectors
from runs.models import LedgerEntry, Message, PassResult, ResultBlob, Run, RunEvent, Step
from spend import quotas
from spend.models import Quota
from spend.services import quota_set
from tests.ops.factory import MESSAGES, STEPS, make_runs
from tests.runs.test_view_runs import client_for, user_with

OLD = 10_000


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.RYSH_SCREENSHOTS_DIR = tmp_path / "screenshots"
    settings.RYSH_VIDEOS_DIR = tmp_path / "videos"
    settings.RYSH_WORKSPACES_DIR = tmp_path / "workspaces"
    settings.RYSH_KEEP_STEPS_DAYS, settings.RYSH_KEEP_MEDIA_DAYS = 90, 30
    settings.RYSH_KEEP_SNAPSHOTS_DAYS, settings.RYSH_SNAPSHOT_KEEP_RUNS = 180, 0
    settings.RYSH_KEEP_DELIVERIES_DAYS, settings.RYSH_KEEP_AUDIT_DAYS = 30, 730


def page(client, url: str) -> str:
    """The page without what differs between two requests of the same state (the CSRF tokens)."""
    answer = client.get(url)
    assert answer.status_code == 200, url
    body = b"".join(answer.streaming_content) if answer.streaming else answer.content
    return re.sub(r'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"', "", body.decode())


def summaries(client, quota_ids: list[int]) -> dict:
    finished = selectors.run_history()
    for pk in quota_ids:  # a window's recount from the ledger, as at a window's start
        Quota.objects.filter(pk=pk).update(window_start=None)
    return {
        "history": [page(client, "/history/"), page(client, "/history/?page=200"), page(client, "/history.csv")],
        "history_totals": finished.aggregate(n=Count("id"), tokens=Sum("tokens_counted"), cost=Sum("cost")),
        "spend": [page(client, "/spend/"), page(client, "/spend/?by=person&period=month")],
        "quotas": [
            (q.used_tokens, q.used_micros) for q in (quotas.current(Quota.objects.get(pk=pk)) for pk in quota_ids)
        ],
        "quota_page": page(client, "/quotas/"),
        "ledger": LedgerEntry.objects.aggregate(n=Count("id"), tokens=Sum("counted_tokens"), cost=Sum("cost")),
    }


def files(settings) -> tuple[int, int]:
    found = retention.files_under(
        [Path(settings.RYSH_SCREENSHOTS_DIR), Path(settings.RYSH_VIDEOS_DIR), Path(settings.RYSH_SNAPSHOTS_DIR)]
    )
    return found.files, found.file_bytes


@pytest.mark.django_db(transaction=True)  # real commits: the free pages are the file's, as in production
def test_a_prune_of_10000_old_runs_keeps_every_summary_and_frees_what_it_said(settings):
    person = user_with("operator")
    old = make_runs(OLD, ended=timezone.now() - timedelta(days=200), user=person, screenshots=200, blobs=50)
    young = make_runs(20, ended=timezone.now() - timedelta(days=2), user=person, screenshots=5, blobs=3, tag="young")
    channel = Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/x", events=["run.ended"])
    Delivery.objects.bulk_create([Delivery(channel=channel, event="run.ended", state="sent") for _ in range(300)])
    Delivery.objects.update(created_at=timezone.now() - timedelta(days=60))
    GitDelivery.objects.bulk_create(
        [
            GitDelivery(received_at=timezone.now() - timedelta(days=60), outcome="ignored", status=202)
            for _ in range(100)
        ]
    )
    AuditEntry.objects.bulk_create(
        [AuditEntry(at=timezone.now() - timedelta(days=800), action="run.start", source="cli") for _ in range(200)]
    )
    ids = [
        quota_set(scope="installation", window="day", tokens=10**12, dollars=None).pk,
        quota_set(scope="user", user=person, window="month", tokens=10**12, dollars=None).pk,
        quota_set(scope="recipe", target="task/old-3", window="rolling 24h", tokens=10**12, dollars=None).pk,
    ]
    viewer = client_for(user_with("viewer"))
    before = summaries(viewer, ids)
    assert before["history_totals"]["n"] == OLD + 20 and before["ledger"]["n"] == (OLD + 20) * STEPS
    assert all(used > 0 for used, _micros in before["quotas"])

    plan = {k.key: k.due for k in retention.retention_plan()}
    files_before, bytes_before = files(settings)
    free_before = retention.free_bytes()
    pruned = retention.retention_prune()
    done = {k.key: k.due for k in pruned.kinds}

    # it removed what the plan (the dry run) said, kind by kind, in short transactions
    assert done == plan
    assert pruned.transactions >= plan["steps"].rows // settings.RYSH_PRUNE_BATCH
    assert plan["steps"].rows == OLD * (STEPS + MESSAGES + 2)
    assert plan["media"].files == 200 * STEPS and plan["snapshots"].rows == OLD + 50
    assert plan["deliveries"].rows == 400 and plan["audit"].rows == 200
    # what stays: the young runs whole, every run's row, pass and ledger
    assert Step.objects.count() == 20 * STEPS and Message.objects.count() == 20 * MESSAGES
    assert PassResult.objects.count() == 20 and ResultBlob.objects.count() == 3
    assert Run.objects.count() == OLD + 20 and LedgerEntry.objects.count() == (OLD + 20) * STEPS
    assert RunEvent.objects.filter(kind="pruned").count() == OLD + 200  # steps for all, media for 200
    # every summary is the same
    after = summaries(viewer, ids)
    for key in before:
        assert after[key] == before[key], key
    # a pruned run's page opens, says so, and still shows its pass and totals
    run_page = page(viewer, f"/runs/{old[0].pk}/")
    assert "steps, messages and events were pruned on" in run_page and "all good" in run_page
    young_page = page(viewer, f"/runs/{young[0].pk}/")
    assert "were pruned on" not in young_page and 'id="step-1-1"' in young_page

    # the space: files exactly as said; rows by the stated estimate (their pages are free pages now)
    files_after, bytes_after = files(settings)
    said = plan["media"] + plan["snapshots"]
    assert (files_before - files_after, bytes_before - bytes_after) == (said.files, said.file_bytes)
    estimated = sum(m.row_bytes for m in plan.values())
    if free_before is not None:  # SQLite: the rows' pages are the file's free pages now
        freed_rows = retention.free_bytes() - free_before
        assert 0.8 * estimated <= freed_rows <= 1.25 * estimated, (freed_rows, estimated)
    entry = AuditEntry.objects.get(action="retention.prune")
    assert entry.detail["steps"]["rows"] == plan["steps"].rows
