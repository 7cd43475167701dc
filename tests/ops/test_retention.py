"""Retention (ops/retention.py): the cut-off, what each kind prunes and what it never touches, the
batches, the audit entry, the command, the schedule, the Storage page and a pruned run's page."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule
from hypothesis import given
from hypothesis import strategies as st

from audit.models import AuditEntry
from audit.services import audit_record
from budgets.plan import Grant as PlanGrant
from catalogue.models import GitDelivery
from notify.models import Attempt, Channel, Delivery
from ops import retention
from ops.apps import REPLACED, RETENTION_SCHEDULE
from runs import services
from runs.models import Grant, LedgerEntry, Message, PassResult, ResultBlob, Run, RunEvent, RunState, Step
from tests.ops.factory import EVENTS, MESSAGES, STEPS, make_runs
from tests.runs.test_grant import ended_at_the_pass_cap
from tests.runs.test_view_runs import client_for, user_with
from workspaces.models import Workspace, WorkspaceState

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def data_dirs(settings, tmp_path):
    settings.RYSH_SCREENSHOTS_DIR = tmp_path / "screenshots"
    settings.RYSH_VIDEOS_DIR = tmp_path / "videos"
    settings.RYSH_WORKSPACES_DIR = tmp_path / "workspaces"
    settings.RYSH_KEEP_STEPS_DAYS, settings.RYSH_KEEP_MEDIA_DAYS = 90, 30
    settings.RYSH_KEEP_SNAPSHOTS_DAYS, settings.RYSH_SNAPSHOT_KEEP_RUNS = 180, 0
    settings.RYSH_KEEP_DELIVERIES_DAYS, settings.RYSH_KEEP_AUDIT_DAYS = 30, 730
    settings.RYSH_WORKSPACE_KEEP_DAYS = 14


def days_ago(days: float) -> datetime:
    return timezone.now() - timedelta(days=days)


def counts() -> dict:
    return {m.__name__: m.objects.count() for m in (Step, Message, RunEvent, PassResult, ResultBlob, LedgerEntry, Run)}


# -- the cut-off ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "ended_days", "days", "due"),
    [
        ("finished", 91, 90, True),
        ("finished", 89, 90, False),
        ("finished", 91, 0, False),  # 0: kept forever
        ("finished", None, 1, False),  # never ended: never due
        ("paused", 400, 1, False),
        ("running", 400, 1, False),
        ("queued", 400, 1, False),
        ("awaiting approval", 400, 1, False),
    ],
)
def test_it_is_due_only_when_finished_and_older_than_its_setting(state, ended_days, days, due):
    ended = None if ended_days is None else NOW - timedelta(days=ended_days)
    assert retention.is_due(state=state, ended_at=ended, now=NOW, days=days) is due


@given(
    st.sampled_from([s.value for s in RunState]),
    st.integers(min_value=0, max_value=10_000_000),
    st.integers(min_value=0, max_value=1000),
)
def test_it_never_takes_an_unfinished_run_or_younger_data(state, age_seconds, days):
    ended = NOW - timedelta(seconds=age_seconds)
    due = retention.is_due(state=state, ended_at=ended, now=NOW, days=days)
    assert due == (state == "finished" and days > 0 and age_seconds > days * 86400)


# -- what each kind prunes ----------------------------------------------------------------------


def test_the_prune_takes_exactly_the_runs_the_cut_off_says(settings):
    """The rule above, against the prune's own queries: every state, just inside, just outside."""
    settings.RYSH_KEEP_STEPS_DAYS = 90
    made = []
    for i, state in enumerate(s.value for s in RunState):
        for age in (None, 89.9, 90.1, 400):
            ended = None if age is None else days_ago(age)
            run = make_runs(1, ended=ended, state=state, tag=f"s{i}-{age}")[0]
            made.append((run, state, ended))
    now = timezone.now()
    retention.retention_prune(now=now)
    for run, state, ended in made:
        due = retention.is_due(state=state, ended_at=ended, now=now, days=90)
        kept = Step.objects.filter(run_pass__run=run).count()
        assert kept == (0 if due else STEPS), (state, ended)
    assert sum(retention.is_due(state=s, ended_at=e, now=now, days=90) for _r, s, e in made) == 2


def test_a_prune_never_touches_unfinished_runs(settings):
    for state in ("queued", "running", "paused", "awaiting approval"):
        make_runs(2, ended=None, state=state, screenshots=2, blobs=1, tag=state.split()[0])
    # a paused run may carry an old end (a run granted more and waiting): still not finished
    make_runs(1, ended=days_ago(900), state="paused", screenshots=1, tag="parked")
    Run.objects.filter(state="paused").update(ended_at=days_ago(900))
    settings.RYSH_KEEP_STEPS_DAYS = settings.RYSH_KEEP_MEDIA_DAYS = settings.RYSH_KEEP_SNAPSHOTS_DAYS = 1
    settings.RYSH_SNAPSHOT_KEEP_RUNS = 1
    before = counts()
    shots = sorted(Path(settings.RYSH_SCREENSHOTS_DIR).rglob("*.jpg"))
    pruned = retention.retention_prune()
    assert counts() == before
    assert sorted(Path(settings.RYSH_SCREENSHOTS_DIR).rglob("*.jpg")) == shots
    assert pruned.total.empty and pruned.audit is None  # nothing removed: no audit entry


def test_it_never_touches_data_younger_than_its_setting(settings):
    young = make_runs(3, ended=days_ago(89), screenshots=3, blobs=2, tag="young")
    old = make_runs(2, ended=days_ago(91), screenshots=2, blobs=2, tag="old")
    retention.retention_prune()
    young_ids, old_ids = [r.pk for r in young], [r.pk for r in old]
    # steps (90 days): the young runs keep theirs, the old lose them
    assert Step.objects.filter(run_pass__run_id__in=young_ids).count() == 3 * STEPS
    assert Message.objects.filter(run_pass__run_id__in=young_ids).count() == 3 * MESSAGES
    assert not Step.objects.filter(run_pass__run_id__in=old_ids).exists()
    assert not Message.objects.filter(run_pass__run_id__in=old_ids).exists()
    assert set(RunEvent.objects.filter(run_id__in=old_ids).values_list("kind", flat=True)) == {"pruned"}
    # media (30 days): gone from both; snapshots (180): kept by both
    assert not any(Path(settings.RYSH_SCREENSHOTS_DIR).rglob("*.jpg"))
    assert not Step.objects.exclude(screenshot="").exists()
    assert PassResult.objects.count() == 5 and ResultBlob.objects.count() == 4


def test_each_kind_is_pruned(settings, tmp_path):
    old = make_runs(4, ended=days_ago(400), screenshots=2, blobs=2)
    video = Path(settings.RYSH_VIDEOS_DIR) / str(old[0].pk) / "pass-1.webm"
    video.parent.mkdir(parents=True)
    video.write_bytes(b"v" * 5000)
    home = Path(settings.RYSH_WORKSPACES_DIR) / "copy-1"
    (home / "tree").mkdir(parents=True)
    (home / "tree" / "main.py").write_text("print('hi')\n" * 100)
    Workspace.objects.create(run=old[1], state=WorkspaceState.ACTIVE, home=str(home), branch="rysh/x/run-1")
    channel = Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/x", events=["run.ended"])
    sent = Delivery.objects.create(channel=channel, event="run.ended", state="sent", attempts=1)
    Attempt.objects.create(delivery=sent, number=1, ok=True)
    waiting = Delivery.objects.create(channel=channel, event="run.ended", state="pending")
    Delivery.objects.update(created_at=days_ago(31))
    GitDelivery.objects.create(received_at=days_ago(31), outcome="accepted", status=200)
    GitDelivery.objects.create(received_at=days_ago(1), outcome="accepted", status=200)
    # an old entry, written old (the model and, on PostgreSQL, a trigger refuse to age one)
    [old_entry] = AuditEntry.objects.bulk_create([AuditEntry(at=days_ago(731), action="run.start", source="web")])
    kept_entry = audit_record(action="run.stop", target=old[0])

    plan = {k.key: k.due for k in retention.retention_plan()}
    pruned = retention.retention_prune()
    done = {k.key: k.due for k in pruned.kinds}
    assert done == plan  # the plan said what the prune then removed

    assert not Step.objects.exists() and not Message.objects.exists()
    assert done["steps"].rows == 4 * (STEPS + MESSAGES + EVENTS)
    assert done["media"].files == 2 * STEPS + 1 and not video.exists()
    assert not PassResult.objects.exists() and not ResultBlob.objects.exists()
    assert done["snapshots"].files == 2 and Run.objects.filter(snapshots_pruned_at__isnull=False).count() == 4
    assert not home.exists() and Workspace.objects.get().state == WorkspaceState.REMOVED
    assert done["workspaces"].files == 1 and done["workspaces"].file_bytes == len("print('hi')\n" * 100)
    assert list(Delivery.objects.all()) == [waiting] and not Attempt.objects.exists()  # a pending one waits
    assert done["deliveries"].rows == 3 and GitDelivery.objects.count() == 1
    assert not AuditEntry.objects.filter(pk=old_entry.pk).exists()
    assert AuditEntry.objects.filter(pk=kept_entry.pk).exists()
    # the ledger stays whole, detached from the steps it counted
    assert LedgerEntry.objects.count() == 4 * STEPS and not LedgerEntry.objects.filter(step__isnull=False).exists()


def test_it_deletes_in_batches_of_short_transactions(settings):
    make_runs(30, ended=days_ago(100))
    with CaptureQueriesContext(connection) as captured:
        pruned = retention.retention_prune(batch=7)
    sql = [q["sql"] for q in captured.captured_queries]
    step_deletes = [s for s in sql if s.startswith('DELETE FROM "automations_step"')]
    message_deletes = [s for s in sql if s.startswith('DELETE FROM "runs_message"')]
    assert len(step_deletes) == -(-30 * STEPS // 7)  # 60 steps, 7 a batch: 9 deletes
    assert len(message_deletes) == -(-30 * MESSAGES // 7)
    assert all(s.split(" IN (")[1].count(",") + 1 <= 7 for s in step_deletes + message_deletes)
    # each batch its own transaction (a savepoint inside the test's own)
    savepoints = [s for s in sql if s.startswith("SAVEPOINT")]
    assert len(savepoints) >= len(step_deletes) + len(message_deletes)
    assert pruned.transactions >= 9 + 14 + 9
    assert pruned.audit.detail["steps"]["rows"] == 30 * (STEPS + MESSAGES + EVENTS)


def test_every_prune_that_removed_something_is_in_the_audit_log():
    make_runs(3, ended=days_ago(100))
    pruned = retention.retention_prune()
    entry = AuditEntry.objects.get(action="retention.prune")
    assert entry == pruned.audit and entry.source == "system"
    assert entry.detail["steps"] == {"rows": 3 * 7, "files": 0, "bytes": pruned.kinds[0].due.bytes}
    assert retention.retention_prune().audit is None  # the second found nothing: no entry
    assert AuditEntry.objects.filter(action="retention.prune").count() == 1


def test_the_command_s_dry_run_changes_nothing_and_says_what_the_prune_removes(settings):
    make_runs(5, ended=days_ago(200), screenshots=2, blobs=3)
    before = counts()
    said = io.StringIO()
    call_command("prune", "--dry-run", stdout=said)
    assert counts() == before and not AuditEntry.objects.filter(action="retention.prune").exists()
    done = io.StringIO()
    call_command("prune", stdout=done)
    dry_lines = said.getvalue().splitlines()
    real_lines = done.getvalue().splitlines()
    assert [line.replace("would remove", "removed") for line in dry_lines] == real_lines
    assert "Steps, messages and events: removed 35 row(s)" in real_lines[0]
    assert "Screenshots and videos: removed 0 row(s) (~0 bytes) and 4 file(s)" in real_lines[1]
    assert AuditEntry.objects.get(action="retention.prune").actor_name.startswith("cli:")


def test_the_old_commands_still_work(settings):
    make_runs(3, ended=days_ago(1), blobs=1)
    out = io.StringIO()
    call_command("prune_snapshots", "--keep", "1", stdout=out)  # 3 runs of 3 recipes: nothing
    assert "pruned the snapshots of 0 run(s)" in out.getvalue()
    call_command("prune_workspaces", "--dry-run", stdout=out)
    assert "would remove 0 working copies" in out.getvalue()


def test_the_schedule_prunes_daily_and_replaces_the_hourly_ones(settings):
    schedule = Schedule.objects.get(name=RETENTION_SCHEDULE)
    assert schedule.schedule_type == Schedule.DAILY
    assert not Schedule.objects.filter(name__in=REPLACED).exists()
    make_runs(2, ended=days_ago(100))
    settings.RYSH_SNAPSHOT_KEEP_RUNS = 1  # the old setting applies through it too
    import_string(schedule.func)()  # as django-q2 calls it
    assert not Step.objects.exists()
    assert AuditEntry.objects.get(action="retention.prune").source == "system"


@pytest.mark.django_db(transaction=True)  # VACUUM cannot run inside the test's transaction
def test_the_space_is_free_inside_the_file_and_vacuum_gives_it_back(settings):
    if connection.vendor != "sqlite":
        pytest.skip("free pages and VACUUM of the file are SQLite's (PostgreSQL: autovacuum, docs/retention.md)")
    make_runs(300, ended=days_ago(100))
    plan = {k.key: k.due for k in retention.retention_plan()}
    before_free, before_file = retention.free_bytes(), retention.database_file_bytes()
    pruned = retention.retention_prune()
    freed = retention.free_bytes() - before_free
    # the pages the rows took are free pages of the file now (reused before the file grows)
    assert freed >= 0.8 * plan["steps"].row_bytes, (freed, plan["steps"].row_bytes)
    assert pruned.kinds[0].due.row_bytes == plan["steps"].row_bytes
    assert retention.database_file_bytes() >= before_file  # a prune alone never shrinks the file
    shrank = retention.database_vacuum()
    assert shrank >= 0.8 * plan["steps"].row_bytes and retention.free_bytes() == 0


# -- the Storage page ---------------------------------------------------------------------------


def test_the_storage_page_is_for_admins_only(client):
    assert client.get("/operations/storage/")["Location"].startswith("/login/")
    for role in ("viewer", "operator", "editor"):
        someone = client_for(user_with(role))
        assert someone.get("/operations/storage/").status_code == 403
        assert someone.post("/operations/storage/prune").status_code == 403
        assert "/operations/storage/" not in someone.get("/history/").content.decode()
        someone.logout()
    make_runs(2, ended=days_ago(100))
    admin = client_for(user_with("admin"))
    page = admin.get("/operations/storage/").content.decode()
    assert 'href="/operations/storage/"' in page  # the nav links it for admins
    assert "RYSH_KEEP_STEPS_DAYS</code>=90" in page and "RYSH_KEEP_AUDIT_DAYS</code>=730" in page
    assert 'id="kind-steps"' in page and "14 rows" in page  # 2 runs' steps, messages and events
    assert retention.Sizes().method in page and "No prune has removed anything yet." in page
    assert Step.objects.count() == 2 * STEPS  # reading the page prunes nothing


def test_prune_now_needs_the_csrf_token_and_says_what_it_did():
    make_runs(2, ended=days_ago(100))
    admin_user = user_with("admin")
    strict = client_for(admin_user, csrf=True)
    assert strict.post("/operations/storage/prune").status_code == 403
    assert Step.objects.count() == 2 * STEPS
    answer = client_for(admin_user).post("/operations/storage/prune", follow=True)
    page = answer.content.decode()
    assert "Pruned 14 row(s)" in page and not Step.objects.exists()
    entry = AuditEntry.objects.get(action="retention.prune")
    assert entry.actor == admin_user
    assert 'id="storage-last"' in page and "admin-user" in page and "steps: 14 row(s), 0 file(s)" in page


def test_a_pruned_run_s_page_opens_and_says_when_its_steps_went(settings):
    run = make_runs(1, ended=days_ago(100), screenshots=1)[0]
    Run.objects.filter(pk=run.pk).update(kind="web")
    retention.retention_prune()
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    today = timezone.localdate().isoformat()
    assert f"steps, messages and events were pruned on {today}" in page
    assert f"screenshots and videos were pruned on {today}" in page
    assert "all good" in page and "3000" in page  # the pass's verdict and reason, the totals
    assert "task leg: 3000 tokens" in page  # the timeline reads the ledger the steps left


def test_a_run_whose_steps_were_pruned_is_not_granted_more(start):
    """A grant goes on as the same run, and a pass cut short goes on from its conversation: once
    retention has pruned that, the grant is refused and resume is offered instead."""
    run = ended_at_the_pass_cap(start)
    Run.objects.filter(pk=run.pk).update(ended_at=days_ago(100))
    retention.retention_prune()
    run.refresh_from_db()
    with pytest.raises(services.RunRefused, match="its steps and conversation were pruned on .*resume it instead"):
        services.run_grant(run=run, extra=PlanGrant(passes=1))
    run.refresh_from_db()
    assert run.state == RunState.FINISHED and not Grant.objects.exists()
