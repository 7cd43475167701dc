"""Retention (docs/retention.md): how long each kind of data is kept, what it takes now, and the
prune that removes what is past its time.

A run keeps forever what its summaries need: its row (totals, cause, plan), its passes (verdicts,
reasons, token counts), its grants, approvals and report, and its ledger entries (the spend page
and every quota's recount sum the ledger, never the steps). Retention removes the bulky rest, each
kind by its own setting (days; 0 keeps it forever), counted from when the run FINISHED — a queued,
running, paused or awaiting run is never touched — or, for deliveries and the audit log, from when
the row was made.

Rows go in batches (RYSH_PRUNE_BATCH rows, one short transaction each), so SQLite's single writer
is never held for long and a worker settling a step waits one batch at most. Files are counted
exactly (their sizes); database rows by an estimate: each table's size on disk (SQLite's dbstat,
PostgreSQL's pg_total_relation_size, indexes included) shared equally among its rows.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import OperationalError, ProgrammingError, connection, models, transaction
from django.utils import timezone

from audit.context import system_action
from audit.models import AuditEntry
from audit.retention import audit_delete_limit
from audit.services import audit_record
from catalogue.models import GitDelivery
from notify.models import Attempt, Delivery, DeliveryState
from runs.models import LedgerEntry, Message, PassResult, ResultBlob, Run, RunEvent, RunState, Step
from runs.results import snapshots
from runs.selectors import PRUNED
from rysh_site.chunks import MANY, chunks
from workspaces.caches import caches_all, caches_due, caches_prune
from workspaces.models import Workspace
from workspaces.services import workspaces_due, workspaces_prune

log = logging.getLogger(__name__)
ACTION = "retention.prune"  # the audit entry every prune that removed something writes


# -- the cut-off (pure) -----------------------------------------------------------------------------


def cutoff(now: datetime, days: int) -> datetime | None:
    """What is older than this goes; None: kept forever (days 0)."""
    return None if days <= 0 else now - timedelta(days=days)


def is_due(*, state: str, ended_at: datetime | None, now: datetime, days: int) -> bool:
    """Whether a run's data of a kind kept `days` days is past its time: only a finished run's,
    and only once it finished more than `days` ago."""
    limit = cutoff(now, days)
    return limit is not None and state == RunState.FINISHED and ended_at is not None and ended_at < limit


# -- what a kind takes -------------------------------------------------------------------------------


@dataclass
class Measure:
    rows: int = 0
    files: int = 0
    file_bytes: int = 0  # exact: the files' sizes
    row_bytes: int = 0  # an estimate (see table_sizes)

    @property
    def bytes(self) -> int:
        return self.file_bytes + self.row_bytes

    @property
    def empty(self) -> bool:
        return not (self.rows or self.files)

    def __add__(self, other: Measure) -> Measure:
        return Measure(
            self.rows + other.rows,
            self.files + other.files,
            self.file_bytes + other.file_bytes,
            self.row_bytes + other.row_bytes,
        )

    def as_dict(self) -> dict:
        return {"rows": self.rows, "files": self.files, "bytes": self.bytes}


@dataclass
class KindPlan:
    key: str
    label: str
    settings: list[tuple[str, int]]  # the settings in force, (name, value)
    held: Measure  # what the kind takes now
    due: Measure  # what the next prune removes (after a prune: what it removed)

    @property
    def days(self) -> int:
        return self.settings[0][1]


class Sizes:
    """Each table's bytes on disk and rows, read once per plan: the row estimate's basis."""

    def __init__(self) -> None:
        self.by_table = table_sizes()
        self.method = {"sqlite": "SQLite dbstat", "postgresql": "pg_total_relation_size"}.get(connection.vendor, "")
        self._rows: dict[type, int] = {}

    def rows(self, model: type[models.Model]) -> int:
        if model not in self._rows:
            self._rows[model] = model._base_manager.count()
        return self._rows[model]

    def estimate(self, model: type[models.Model], rows: int) -> int:
        """`rows` rows of `model`: its table's bytes (indexes included) times their share."""
        total = self.rows(model)
        table = (self.by_table or {}).get(model._meta.db_table, 0)
        return 0 if not total or not rows else round(table * min(rows, total) / total)

    def measure(self, model: type[models.Model], rows: int) -> Measure:
        """`rows` rows of `model`, with their estimated bytes."""
        return Measure(rows=rows, row_bytes=self.estimate(model, rows))

    def held(self, *models_: type[models.Model]) -> Measure:
        rows = sum(self.rows(m) for m in models_)
        return Measure(rows=rows, row_bytes=sum((self.by_table or {}).get(m._meta.db_table, 0) for m in models_))


def table_sizes() -> dict[str, int] | None:
    """Bytes per table, its indexes included; None when the database cannot say."""
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')")
                owner = dict(cursor.fetchall())
                cursor.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
                sizes: dict[str, int] = {}
                for name, size in cursor.fetchall():
                    table = owner.get(name, name)
                    sizes[table] = sizes.get(table, 0) + int(size or 0)
                return sizes
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE c.relkind = 'r' AND n.nspname = current_schema()"
                )
                return {name: int(size) for name, size in cursor.fetchall()}
    except (OperationalError, ProgrammingError):  # SQLite built without dbstat
        log.info("retention: this database cannot say its tables' sizes; rows are counted only")
    return None


def free_bytes() -> int | None:
    """SQLite: the free pages inside the database file (reused by new rows before it grows; VACUUM
    gives them back to the system). None on other databases."""
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cursor:
        pages = cursor.execute("PRAGMA freelist_count").fetchone()[0]
        size = cursor.execute("PRAGMA page_size").fetchone()[0]
    return pages * size


def database_file_bytes() -> int | None:
    """SQLite: the database file with its write-ahead log (recent writes sit there until a
    checkpoint). None on other databases."""
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict["NAME"])
    return sum(os.path.getsize(p) for p in (name, f"{name}-wal") if os.path.exists(p)) or None


def last_prune_text(entry: AuditEntry) -> str:
    """What a prune's audit entry says it removed, kind by kind."""
    labels = {"steps": "steps", "media": "media", "snapshots": "snapshots", "workspaces": "working copies"}
    labels["caches"] = "dependency caches"
    parts = []
    for key, measure in entry.detail.items():
        if isinstance(measure, dict) and (measure.get("rows") or measure.get("files")):
            parts.append(
                f"{labels.get(key, key)}: {measure['rows']} row(s), {measure['files']} file(s), "
                f"{measure['bytes']:,} bytes"
            )
    return "; ".join(parts) or "nothing"


def files_under(paths: Iterable[Path]) -> Measure:
    """Files and their exact sizes under each path (a missing path counts nothing)."""
    measure = Measure()
    for path in paths:
        for root, _dirs, names in os.walk(path):
            for name in names:
                try:
                    measure.file_bytes += os.lstat(os.path.join(root, name)).st_size
                    measure.files += 1
                except FileNotFoundError:  # gone meanwhile
                    pass
    return measure


# -- the kinds -----------------------------------------------------------------------------------


def _finished_before(limit: datetime | None):
    if limit is None:
        return Run.objects.none()
    return Run.objects.filter(state=RunState.FINISHED, ended_at__lt=limit)


def _steps_querysets(limit):
    runs = _finished_before(limit)
    return (
        Step.objects.filter(run_pass__run__in=runs),
        Message.objects.filter(run_pass__run__in=runs),
        RunEvent.objects.filter(run__in=runs).exclude(kind=PRUNED),
    )


def _media_folders(limit) -> list[tuple[int, list[Path]]]:
    """(run id, its screenshot and video folders) of each finished run past the limit that has any."""
    due = set(_finished_before(limit).values_list("id", flat=True))
    found: dict[int, list[Path]] = {}
    for root in (Path(settings.RYSH_SCREENSHOTS_DIR), Path(settings.RYSH_VIDEOS_DIR)):
        if root.is_dir():
            for folder in root.iterdir():
                if folder.is_dir() and folder.name.isdigit() and int(folder.name) in due:
                    found.setdefault(int(folder.name), []).append(folder)
    return sorted(found.items())


def _deliveries_querysets(limit):
    if limit is None:
        return Delivery.objects.none(), Attempt.objects.none(), GitDelivery.objects.none()
    done = Delivery.objects.filter(created_at__lt=limit).exclude(state=DeliveryState.PENDING)
    return done, Attempt.objects.filter(delivery__in=done), GitDelivery.objects.filter(received_at__lt=limit)


def _audit_queryset(limit):
    return AuditEntry.objects.none() if limit is None else AuditEntry.objects.filter(at__lt=limit)


def retention_plan(*, now: datetime | None = None, sizes: Sizes | None = None) -> list[KindPlan]:
    """For each kind: the settings in force, what it takes now and what the next prune removes."""
    now = now or timezone.now()
    sizes = sizes or Sizes()
    return [builder(now, sizes) for builder in (_plan_steps, _plan_media, _plan_snapshots, _plan_workspaces)] + [
        _plan_caches(now),
        _plan_deliveries(now, sizes),
        _plan_audit(now, sizes),
    ]


def _rows(sizes: Sizes, querysets) -> Measure:
    measure = Measure()
    for qs in querysets:
        measure += sizes.measure(qs.model, qs.count())
    return measure


def _plan_steps(now, sizes) -> KindPlan:
    days = settings.RYSH_KEEP_STEPS_DAYS
    return KindPlan(
        "steps",
        "Steps, messages and events",
        [("RYSH_KEEP_STEPS_DAYS", days)],
        sizes.held(Step, Message, RunEvent),
        _rows(sizes, _steps_querysets(cutoff(now, days))),
    )


def _plan_media(now, sizes) -> KindPlan:
    days = settings.RYSH_KEEP_MEDIA_DAYS
    due = files_under(path for _run, folders in _media_folders(cutoff(now, days)) for path in folders)
    return KindPlan(
        "media",
        "Screenshots and videos",
        [("RYSH_KEEP_MEDIA_DAYS", days)],
        files_under([Path(settings.RYSH_SCREENSHOTS_DIR), Path(settings.RYSH_VIDEOS_DIR)]),
        due,
    )


def _plan_snapshots(now, sizes) -> KindPlan:
    days, keep = settings.RYSH_KEEP_SNAPSHOTS_DAYS, settings.RYSH_SNAPSHOT_KEEP_RUNS
    would = snapshots.prune(keep=keep, before=cutoff(now, days), dry_run=True)
    blobs = ResultBlob.objects.aggregate(n=models.Count("id"), size=models.Sum("size"))
    held = sizes.held(PassResult, ResultBlob) + Measure(files=blobs["n"], file_bytes=blobs["size"] or 0)
    due = Measure(
        rows=would.files + would.blobs,
        files=would.blobs,
        file_bytes=would.bytes_freed,
        row_bytes=sizes.estimate(PassResult, would.files) + sizes.estimate(ResultBlob, would.blobs),
    )
    return KindPlan(
        "snapshots",
        "Result snapshots",
        [("RYSH_KEEP_SNAPSHOTS_DAYS", days), ("RYSH_SNAPSHOT_KEEP_RUNS", keep)],
        held,
        due,
    )


def _plan_workspaces(now, sizes) -> KindPlan:
    days = settings.RYSH_WORKSPACE_KEEP_DAYS
    due = files_under(Path(w.home) for w in workspaces_due(now=now))
    return KindPlan(
        "workspaces",
        "Finished working copies",
        [("RYSH_WORKSPACE_KEEP_DAYS", days)],
        files_under([Path(settings.RYSH_WORKSPACES_DIR)]),
        due,
    )


def _plan_caches(now) -> KindPlan:
    days = settings.RYSH_KEEP_CACHES_DAYS
    return KindPlan(
        "caches",
        "Dependency caches of coding loops",
        [("RYSH_KEEP_CACHES_DAYS", days)],
        files_under([Path(settings.RYSH_CACHES_DIR)]),
        files_under(cache.root for cache in _caches_due(now)),
    )


def caches_held() -> list[dict]:
    """The Storage page's list of dependency caches: whose, how big, when a run last used each."""
    return [
        {
            "name": cache.root.name,
            "repository": cache.repository(),
            "bytes": files_under([cache.root]).file_bytes,
            "last_used": cache.last_used(),
        }
        for cache in caches_all()
    ]


def _caches_due(now) -> list:
    """Caches unused past their days, but never the repository's of a run not finished."""
    busy = set(Workspace.objects.exclude(run__state=RunState.FINISHED).values_list("source", flat=True))
    return caches_due(now=now, busy=busy)


def _plan_deliveries(now, sizes) -> KindPlan:
    days = settings.RYSH_KEEP_DELIVERIES_DAYS
    return KindPlan(
        "deliveries",
        "Notification and push-hook deliveries",
        [("RYSH_KEEP_DELIVERIES_DAYS", days)],
        sizes.held(Delivery, Attempt, GitDelivery),
        _rows(sizes, _deliveries_querysets(cutoff(now, days))),
    )


def _plan_audit(now, sizes) -> KindPlan:
    days = settings.RYSH_KEEP_AUDIT_DAYS
    return KindPlan(
        "audit",
        "Audit log",
        [("RYSH_KEEP_AUDIT_DAYS", days)],
        sizes.held(AuditEntry),
        _rows(sizes, [_audit_queryset(cutoff(now, days))]),
    )


# -- the prune -----------------------------------------------------------------------------------


@dataclass
class Pruned:
    kinds: list[KindPlan]  # `due` holds what was removed (a dry run: what would be)
    dry_run: bool
    transactions: int = 0  # the short transactions the deletes took
    vacuumed: int | None = None  # bytes the database file shrank by, when asked to VACUUM
    audit: AuditEntry | None = None

    @property
    def total(self) -> Measure:
        total = Measure()
        for kind in self.kinds:
            total += kind.due
        return total

    def lines(self) -> list[str]:
        verb = "would remove" if self.dry_run else "removed"
        said = []
        for kind in self.kinds:
            if kind.days == 0 and kind.key != "snapshots":
                said.append(f"{kind.label}: kept forever ({kind.settings[0][0]}=0)")
                continue
            m = kind.due
            said.append(
                f"{kind.label}: {verb} {m.rows} row(s) (~{m.row_bytes} bytes) and {m.files} file(s) "
                f"({m.file_bytes} bytes)"
            )
        total = self.total
        said.append(f"in all: {verb} {total.rows} row(s) and {total.files} file(s), {total.bytes} bytes")
        if self.vacuumed is not None:
            said.append(f"VACUUM: the database file shrank by {self.vacuumed} bytes")
        return said


@dataclass
class _Batches:
    size: int
    transactions: int = 0

    def delete(self, queryset, prepare: Callable[[list[int]], None] | None = None, raw: Callable | None = None) -> int:
        """Delete what `queryset` selects, `size` rows per short transaction; each batch is chosen
        inside its transaction, so a row that stopped matching meanwhile is never taken."""
        model, total = queryset.model, 0
        while True:
            with transaction.atomic():
                ids = list(queryset.order_by("pk").values_list("pk", flat=True)[: self.size])
                if not ids:
                    break
                if prepare:
                    prepare(ids)
                if raw:
                    raw(ids)
                else:
                    model._base_manager.filter(pk__in=ids).delete()
                self.transactions += 1
            total += len(ids)
        return total


def retention_prune(
    *, dry_run: bool = False, batch: int | None = None, now: datetime | None = None, actor=None, vacuum: bool = False
) -> Pruned:
    """Remove what is past its time, kind by kind, and write one audit entry with the counts
    (none when nothing was removed). A dry run changes nothing and says the same numbers."""
    now = now or timezone.now()
    sizes = Sizes()  # measured before anything goes: the prune's estimate is the plan's
    plan = retention_plan(now=now, sizes=sizes)
    if dry_run:
        return Pruned(plan, dry_run=True)
    batches = _Batches(size=max(1, min(batch or settings.RYSH_PRUNE_BATCH, MANY)))
    by_key = {k.key: k for k in plan}
    done = [
        _prune_steps(by_key["steps"], now, batches, sizes),
        _prune_media(by_key["media"], now, batches),
        _prune_snapshots(by_key["snapshots"], now, batches, sizes),
        _prune_workspaces(by_key["workspaces"], now),
        _prune_caches(by_key["caches"], now),
        _prune_deliveries(by_key["deliveries"], now, batches, sizes),
        _prune_audit(by_key["audit"], now, batches, sizes),
    ]
    pruned = Pruned(done, dry_run=False, transactions=batches.transactions)
    if vacuum:
        pruned.vacuumed = database_vacuum()
    if not pruned.total.empty:
        detail = {k.key: k.due.as_dict() for k in done} | {"transactions": batches.transactions}
        pruned.audit = audit_record(actor=actor, action=ACTION, detail=detail)
    return pruned


def _removed(kind: KindPlan, measure: Measure) -> KindPlan:
    return KindPlan(kind.key, kind.label, kind.settings, kind.held, measure)


def _detach_ledger(step_ids: list[int]) -> None:
    """The ledger entries stay (spend, quotas, the timeline's bars read them); only their link to
    the step goes, or the step's delete would take them along (on_delete CASCADE)."""
    LedgerEntry.objects.filter(step_id__in=step_ids).update(step=None)


def _prune_steps(kind: KindPlan, now, batches: _Batches, sizes: Sizes) -> KindPlan:
    limit = cutoff(now, kind.days)
    if limit is None:
        return _removed(kind, Measure())
    steps, messages, events = _steps_querysets(limit)
    touched = set(steps.values_list("run_pass__run_id", flat=True).distinct())
    touched |= set(messages.values_list("run_pass__run_id", flat=True).distinct())
    touched |= set(events.values_list("run_id", flat=True).distinct())
    measure = Measure()
    for qs, prepare in ((steps, _detach_ledger), (messages, None), (events, None)):
        measure += sizes.measure(qs.model, batches.delete(qs, prepare))
    _mark(touched, ["steps"], f"steps, messages and events pruned (kept {kind.days} days)", batches)
    return _removed(kind, measure)


def _mark(run_ids: set[int], what: list[str], message: str, batches: _Batches) -> None:
    """The run page says what went and when: one `pruned` event per run (kept by later prunes)."""
    for chunk in chunks(sorted(run_ids), batches.size):
        with transaction.atomic():
            finished = Run.objects.filter(pk__in=chunk, state=RunState.FINISHED).values_list("id", flat=True)
            RunEvent.objects.bulk_create(
                [RunEvent(run_id=run_id, kind=PRUNED, message=message, data={"what": what}) for run_id in finished]
            )
            batches.transactions += 1


def _prune_media(kind: KindPlan, now, batches: _Batches) -> KindPlan:
    limit = cutoff(now, kind.days)
    if limit is None:
        return _removed(kind, Measure())
    measure, removed = Measure(), set()
    for batch in chunks(_media_folders(limit), batches.size):
        chunk = dict(batch)
        # still finished: a grant may have sent one back to work since it was chosen
        still = set(Run.objects.filter(pk__in=list(chunk), state=RunState.FINISHED).values_list("id", flat=True))
        for run_id in sorted(still):
            measure += files_under(chunk[run_id])
            for folder in chunk[run_id]:
                shutil.rmtree(folder, ignore_errors=True)
            removed.add(run_id)
        with transaction.atomic():  # the filmstrip must not link what is gone
            Step.objects.filter(run_pass__run_id__in=sorted(still)).exclude(screenshot="").update(screenshot="")
            batches.transactions += 1
    _mark(removed, ["media"], f"screenshots and videos pruned (kept {kind.days} days)", batches)
    return _removed(kind, measure)


def _prune_snapshots(kind: KindPlan, now, batches: _Batches, sizes: Sizes) -> KindPlan:
    days, keep = kind.settings[0][1], kind.settings[1][1]
    before = PassResult.objects.count()
    done = snapshots.prune(keep=keep, before=cutoff(now, days), batch=batches.size)
    rows = before - PassResult.objects.count()
    return _removed(
        kind,
        Measure(
            rows=rows + done.blobs,
            files=done.blobs,
            file_bytes=done.bytes_freed,
            row_bytes=sizes.estimate(PassResult, rows) + sizes.estimate(ResultBlob, done.blobs),
        ),
    )


def _prune_workspaces(kind: KindPlan, now) -> KindPlan:
    measure = files_under(Path(w.home) for w in workspaces_due(now=now))
    workspaces_prune(now=now)
    return _removed(kind, measure)


def _prune_caches(kind: KindPlan, now) -> KindPlan:
    due = _caches_due(now)
    measure = files_under(cache.root for cache in due)
    caches_prune(due)
    return _removed(kind, measure)


def _prune_deliveries(kind: KindPlan, now, batches: _Batches, sizes: Sizes) -> KindPlan:
    limit = cutoff(now, kind.days)
    if limit is None:
        return _removed(kind, Measure())
    done, attempts, hooks = _deliveries_querysets(limit)
    measure = sizes.measure(Attempt, attempts.count())  # they go with their deliveries (on_delete CASCADE)
    for qs in (done, hooks):
        measure += sizes.measure(qs.model, batches.delete(qs))
    return _removed(kind, measure)


def _prune_audit(kind: KindPlan, now, batches: _Batches, sizes: Sizes) -> KindPlan:
    limit = cutoff(now, kind.days)
    if limit is not None:
        limit = audit_delete_limit(limit)  # on PostgreSQL, no later than the trigger allows
    if limit is None:
        return _removed(kind, Measure())
    count = batches.delete(_audit_queryset(limit), raw=lambda ids: _delete_audit(ids, limit))
    return _removed(kind, sizes.measure(AuditEntry, count))


def _delete_audit(ids: list[int], limit: datetime) -> None:
    """The audit log is append-only: its model refuses every delete, and on PostgreSQL so does a
    trigger, except rows older than the retention the tables' owner set (audit/retention.py).
    Retention is the one path that removes audit rows, and only those past RYSH_KEEP_AUDIT_DAYS."""
    table = connection.ops.quote_name(AuditEntry._meta.db_table)
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        at = connection.ops.adapt_datetimefield_value(limit)
        cursor.execute(f"DELETE FROM {table} WHERE at < %s AND id IN ({marks})", [at, *ids])  # noqa: S608


def database_vacuum() -> int | None:
    """Give the free pages back to the system (SQLite VACUUM: rewrites the whole file and holds
    the database meanwhile, so an operator's choice: `manage.py prune --vacuum`). Returns how
    many bytes the file shrank by; None on other databases (PostgreSQL's autovacuum makes the
    space reusable by itself)."""
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cursor:
        # in WAL mode written pages sit in the log until a checkpoint copies them into the file:
        # one before (so the file's size is its own) and one after (so the rewrite lands)
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = database_file_bytes() or 0
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return before - (database_file_bytes() or 0)


def last_prune() -> AuditEntry | None:
    return AuditEntry.objects.filter(action=ACTION).order_by("-at", "-id").first()


def prune_scheduled() -> str:
    """The daily django-q2 schedule's task (ops/apps.py): the prune, as the system."""
    with system_action():
        pruned = retention_prune()
    return "; ".join(pruned.lines())
