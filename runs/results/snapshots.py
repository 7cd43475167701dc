"""Result snapshots (docs/judge-workbench.md): when a pass ends, the result files its run saved are kept as that
pass's snapshot. Each content is stored once, under RYSH_SNAPSHOTS_DIR/<sha[:2]>/<sha256>, so an
unchanged 1 MB file costs nothing the second time; a PassResult row links a name to its content.

The results folder is shared by a recipe's runs: a later run overwriting `results.md` changes the
folder, never a snapshot. The run page, the file viewer, the report, the judge and re-judging
read snapshots. `prune` drops the snapshots of runs beyond the retention setting and the contents
nothing points at any more.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from budgets.plan import JUDGE_RESULT_CAP_BYTES
from runs.engine.verdicts import result_files
from runs.models import Pass, PassResult, ResultBlob, Run, RunState
from rysh_site.chunks import MANY, chunks

CHUNK = 1024 * 1024


def blob_path(sha256: str) -> Path:
    return Path(settings.RYSH_SNAPSHOTS_DIR) / sha256[:2] / sha256


# -- taking a snapshot ---------------------------------------------------------------------------


def snapshot_pass(run_pass: Pass, folder: Path, *, since: float | None) -> list[PassResult]:
    """Keep the run's result files as `run_pass`'s snapshot, once: a pass already snapshotted
    keeps what it has (immutable). Called when the pass ends, or when its run ends first."""
    if run_pass.snapshot_at is not None:
        return list(run_pass.results.all())
    for attempt in range(2):
        known = _earlier(run_pass)
        kept = [_keep(path, folder, known) for path in result_files(folder, since=since)]
        try:
            return _link(run_pass, kept)
        except IntegrityError:  # a prune removed a content between keeping and linking: keep again
            if attempt:
                raise
        finally:  # copies not moved into place (already stored, or the link failed)
            for item in kept:
                if item.staged is not None:
                    item.staged.unlink(missing_ok=True)
    return []  # unreachable


@dataclass(frozen=True)
class _Kept:
    name: str
    size: int
    modified_at: datetime
    sha256: str | None  # None: too large to keep
    staged: Path | None  # a copy waiting to be moved into place


def _earlier(run_pass: Pass) -> dict[tuple[str, int, datetime], str]:
    """What the run's earlier passes kept, by (name, size, modification time): a file untouched
    since is linked again without being read."""
    rows = PassResult.objects.filter(run_pass__run_id=run_pass.run_id, blob__isnull=False).exclude(run_pass=run_pass)
    return {
        (name, size, at): sha for name, size, at, sha in rows.values_list("name", "size", "modified_at", "blob__sha256")
    }


def _keep(path: Path, folder: Path, known: dict) -> _Kept:
    """Copy the file aside while hashing it, so what is stored is exactly what was hashed even
    if the agent (or another run) writes the file again meanwhile."""
    stat = path.stat()
    name = str(path.relative_to(folder))
    modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    if stat.st_size > settings.RYSH_SNAPSHOT_FILE_MAX_BYTES:
        return _Kept(name, stat.st_size, modified, None, None)
    if (name, stat.st_size, modified) in known:
        return _Kept(name, stat.st_size, modified, known[(name, stat.st_size, modified)], None)
    root = Path(settings.RYSH_SNAPSHOTS_DIR)
    root.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    fd, staged = tempfile.mkstemp(dir=root, prefix=".staged-")
    with os.fdopen(fd, "wb") as out, path.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    return _Kept(name, size, modified, digest.hexdigest(), Path(staged))


def _link(run_pass: Pass, kept: list[_Kept]) -> list[PassResult]:
    rows = []
    with transaction.atomic():
        for item in kept:
            blob = _blob(item) if item.sha256 else None
            rows.append(
                PassResult(run_pass=run_pass, name=item.name, blob=blob, size=item.size, modified_at=item.modified_at)
            )
        # a worker that died mid-snapshot may have left rows: the snapshot is written whole
        PassResult.objects.filter(run_pass=run_pass).delete()
        PassResult.objects.bulk_create(rows)
        run_pass.snapshot_at = timezone.now()
        Pass.objects.filter(pk=run_pass.pk).update(snapshot_at=run_pass.snapshot_at)
    return rows


def _blob(item: _Kept) -> ResultBlob:
    """The content's row, locked until the snapshot commits (a prune waits for it), and its file
    in place: moved from the staged copy when absent, the copy dropped when already there."""
    blob, _ = ResultBlob.objects.select_for_update().get_or_create(sha256=item.sha256, defaults={"size": item.size})
    target = blob_path(blob.sha256)
    if item.staged is not None and item.staged.exists():
        if target.exists():
            item.staged.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(item.staged, target)
    return blob


def snapshot_unended_pass(run: Run) -> None:
    """At a run's end: the last pass, when it never ended (an error, a stop mid-leg), is kept as
    it stands, so every finished run has its results."""
    if not run.output_dir:
        return
    last = run.passes.order_by("-number").first()
    if last is not None and last.snapshot_at is None:
        snapshot_pass(last, Path(run.output_dir), since=run.results_since())


# -- reading -------------------------------------------------------------------------------------


def has_snapshots(run: Run) -> bool:
    return Pass.objects.filter(run=run, snapshot_at__isnull=False).exists()


def run_snapshot_files(run: Run) -> list[PassResult]:
    """Each file the run saved, as the newest snapshot holding it kept it: newest first."""
    newest: dict[str, PassResult] = {}
    rows = PassResult.objects.filter(run_pass__run=run).select_related("blob", "run_pass")
    for row in rows.order_by("-run_pass__number"):
        newest.setdefault(row.name, row)
    return sorted(newest.values(), key=lambda r: (r.modified_at, r.name), reverse=True)


def snapshot_file(run: Run, name: str, *, pass_number: int | None = None) -> PassResult | None:
    """`name` as the run's newest snapshot (or pass `pass_number`'s) kept it."""
    rows = PassResult.objects.filter(run_pass__run=run, name=name).select_related("blob", "run_pass")
    if pass_number is not None:
        rows = rows.filter(run_pass__number=pass_number)
    return rows.order_by("-run_pass__number").first()


def open_result(row: PassResult) -> BinaryIO | None:
    """The kept content, or None when it was too large to keep or its file is gone."""
    if row.blob is None:
        return None
    try:
        return blob_path(row.blob.sha256).open("rb")
    except FileNotFoundError:
        return None


def judged_result(run_pass: Pass) -> PassResult | None:
    """The file the judge reads for this pass: its result file as the snapshot kept it, or the
    snapshot's newest file (ties by name)."""
    return judged_results([run_pass])[run_pass.pk]


def judged_results(passes: list[Pass]) -> dict[int, PassResult | None]:
    """judged_result of each pass (by its id), in one query: a run's report names every pass's."""
    rows: dict[int, list[PassResult]] = {p.pk: [] for p in passes}
    for row in PassResult.objects.filter(run_pass__in=list(rows)).select_related("blob"):
        rows[row.run_pass_id].append(row)
    judged = {}
    for p in passes:
        chosen = next((row for row in rows[p.pk] if row.name == p.result_file), None) if p.result_file else None
        newest = max(rows[p.pk], key=lambda row: (row.modified_at, row.name), default=None)
        judged[p.pk] = chosen or newest
    return judged


def judge_input(run_pass: Pass) -> tuple[str, str] | None:
    """(name, text) of the pass's judged result, read up to the judge's cap: what the judge (and
    a re-judge) is sent. None when the pass kept no readable result."""
    row = judged_result(run_pass)
    handle = open_result(row) if row is not None else None
    if handle is None:
        return None
    with handle:
        data = handle.read(JUDGE_RESULT_CAP_BYTES)
    return row.name, data.decode("utf-8", errors="replace")


# -- retention -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pruned:
    runs: int  # runs whose snapshots were dropped
    files: int  # PassResult rows dropped
    blobs: int  # contents removed (nothing pointed at them any more)
    bytes_freed: int

    def describe(self, *, dry_run: bool = False) -> str:
        verb = "would prune" if dry_run else "pruned"
        return (
            f"{verb} the snapshots of {self.runs} run(s): {self.files} file(s); "
            f"{'would free' if dry_run else 'freed'} {self.bytes_freed} bytes in {self.blobs} stored content(s)"
        )


def runs_to_prune(keep: int, *, before: datetime | None = None) -> list[int]:
    """Finished runs that still hold snapshots and are either beyond the newest `keep` per recipe
    (0: none are) or ended before `before` (None: no age limit; ops/retention.py)."""
    finished = Run.objects.filter(state=RunState.FINISHED, snapshots_pruned_at__isnull=True)
    chosen = set(finished.filter(ended_at__lt=before).values_list("id", flat=True)) if before else set()
    if keep > 0:
        seen: dict[str, int] = {}
        for run_id, target in finished.order_by("target", "-created_at", "-id").values_list("id", "target"):
            seen[target] = seen.get(target, 0) + 1
            if seen[target] > keep:
                chosen.add(run_id)
    if not chosen:
        return []
    # which of them still hold snapshots: one query whatever their number (no list of ids)
    holding = PassResult.objects.filter(run_pass__run__in=finished).values_list("run_pass__run_id", flat=True)
    return sorted(chosen & set(holding.distinct()))


def prune(*, keep: int, before: datetime | None = None, dry_run: bool = False, batch: int = 500) -> Pruned:
    """Drop the snapshots of each recipe's runs beyond the newest `keep` finished ones (and of
    the runs that ended before `before`), then the contents nothing points at any more (a
    content still in a kept snapshot stays). Rows go `batch` runs per transaction."""
    run_ids = runs_to_prune(keep, before=before)
    files = sum(
        PassResult.objects.filter(run_pass__run_id__in=chunk).count() for chunk in chunks(run_ids, min(batch, MANY))
    )
    if dry_run:
        blobs, freed = _orphans_after(set(run_ids))
        return Pruned(len(run_ids), files, blobs, freed)
    for chunk in chunks(run_ids, min(batch, MANY)):
        with transaction.atomic():  # a short transaction each: a worker's settle never waits long
            # still finished: a grant may have sent one back to work since it was chosen
            chunk = list(Run.objects.filter(pk__in=chunk, state=RunState.FINISHED).values_list("id", flat=True))
            PassResult.objects.filter(run_pass__run_id__in=chunk).delete()
            Run.objects.filter(pk__in=chunk).update(snapshots_pruned_at=timezone.now())
    blobs, freed = _drop_orphans()
    return Pruned(len(run_ids), files, blobs, freed)


def _orphans_after(doomed: set[int]) -> tuple[int, int]:
    """(contents, bytes) nothing would point at once the snapshots of `doomed` runs are gone: the
    contents no snapshot points at now, and those only the doomed runs' snapshots point at. Reads
    the doomed runs' contents and their holders only, `MANY` ids a query."""
    unused = ResultBlob.objects.exclude(Exists(PassResult.objects.filter(blob=OuterRef("pk"))))
    sizes = list(unused.values_list("size", flat=True))
    candidates: set[int] = set()
    for chunk in chunks(sorted(doomed), MANY):
        rows = PassResult.objects.filter(run_pass__run_id__in=chunk, blob__isnull=False)
        candidates.update(rows.values_list("blob_id", flat=True))
    kept = set()
    for chunk in chunks(sorted(candidates), MANY):
        holders = PassResult.objects.filter(blob_id__in=chunk).values_list("blob_id", "run_pass__run_id")
        kept.update(blob_id for blob_id, run_id in holders if run_id not in doomed)
    for chunk in chunks(sorted(candidates - kept), MANY):
        sizes += ResultBlob.objects.filter(pk__in=chunk).values_list("size", flat=True)
    return len(sizes), sum(sizes)


def _drop_orphans() -> tuple[int, int]:
    """Remove each content no snapshot points at: its row under lock (a snapshot linking it at
    the same moment waits, then makes it again), then its file."""
    referenced = PassResult.objects.filter(blob=OuterRef("pk"))
    count = freed = 0
    for blob_id in ResultBlob.objects.exclude(Exists(referenced)).values_list("id", flat=True):
        with transaction.atomic():
            blob = ResultBlob.objects.select_for_update().filter(pk=blob_id).first()
            if blob is None or PassResult.objects.filter(blob=blob).exists():
                continue
            blob.delete()
            blob_path(blob.sha256).unlink(missing_ok=True)
        count, freed = count + 1, freed + blob.size
    return count, freed


# -- restoring: a fork starts from a pass's results (docs/forks.md) -------------------------------


def restore_pass(run_pass: Pass, folder: Path) -> list[str]:
    """Write `run_pass`'s snapshot into `folder` as it was kept (written now: the new run's own
    files). Returns the names that could not be restored: too large to keep, or content gone."""
    missing = []
    for row in PassResult.objects.filter(run_pass=run_pass).select_related("blob").order_by("name"):
        handle = open_result(row)
        if handle is None:
            missing.append(row.name)
            continue
        target = folder / row.name
        if not target.resolve().is_relative_to(folder.resolve()):
            missing.append(row.name)  # never outside the folder, whatever a name says
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with handle, target.open("wb") as out:
            while chunk := handle.read(CHUNK):
                out.write(chunk)
    return missing
