"""Old runs made in bulk for the retention tests: each finished run has a pass with its verdict,
steps with their ledger entries, messages, events, a result snapshot, and (some) a screenshot."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from runs.models import LedgerEntry, Message, Pass, PassResult, ResultBlob, Run, RunEvent, RunState, Step
from runs.results.snapshots import blob_path

STEPS, MESSAGES, EVENTS = 2, 3, 2
TEXT = "the model said a long thing " * 20


def make_runs(
    count: int,
    *,
    ended: datetime | None,
    state: str = RunState.FINISHED,
    user=None,
    screenshots: int = 0,
    blobs: int = 0,
    tag: str = "old",
) -> list[Run]:
    """`count` runs that ended at `ended` (None: not ended), each with all its parts."""
    runs = Run.objects.bulk_create(
        [
            Run(
                kind="task",
                name=f"{tag}-{i}",
                target=f"task/{tag}-{i}" if state != RunState.FINISHED else f"task/{tag}-{i % 7}",
                slot=f"task/{tag}-{i}" if state != RunState.FINISHED else f"task/{tag}-{i % 7}",  # (no save())
                recipe_path="x.md",
                recipe_text="---\n---\nDo it.",
                provider="scripted",
                executor_model="claude-sonnet-4-5",
                judge_model="claude-haiku-4-5",
                output_dir="",
                state=state,
                cause="done" if state == RunState.FINISHED else "",
                pass_number=1,
                last_verdict="YES",
                tokens_counted=3000,
                input_tokens=2000,
                output_tokens=1000,
                cost=Decimal("0.012000"),
                started_at=(ended or timezone.now()) - timedelta(minutes=5),
                ended_at=ended,
                user=user,
                charged_to=user,
                plan={"per_pass": {"tokens": 100000}},
            )
            for i in range(count)
        ],
        batch_size=500,
    )
    passes = Pass.objects.bulk_create(
        [
            Pass(
                run=r,
                number=1,
                verdict="YES",
                reason="all good",
                tokens_counted=3000,
                steps_total=STEPS,
                ended_at=ended,
            )
            for r in runs
        ],
        batch_size=500,
    )
    steps = Step.objects.bulk_create(
        [
            Step(
                run_pass=p,
                number=n + 1,
                leg="task",
                status="done",
                model="claude-sonnet-4-5",
                max_tokens=1000,
                reserved_tokens=5000,
                input_tokens=1000,
                output_tokens=500,
                counted_tokens=1500,
                text=TEXT,
                tool_calls=[{"name": "read", "input": {"path": "a"}}],
                screenshot=f"{p.run_id}/1-{n + 1}.jpg" if i < screenshots else "",
            )
            for i, p in enumerate(passes)
            for n in range(STEPS)
        ],
        batch_size=500,
    )
    LedgerEntry.objects.bulk_create(
        [
            LedgerEntry(
                run_id=s.run_pass.run_id,
                step=s,
                pass_number=1,
                purpose="task",
                model=s.model,
                input_tokens=1000,
                output_tokens=500,
                counted_tokens=1500,
                cost=Decimal("0.006000"),
                charged_to=user,
            )
            for s in steps
        ],
        batch_size=500,
    )
    Message.objects.bulk_create(
        [
            Message(
                run_pass=p,
                index=n,
                role="user" if n % 2 == 0 else "assistant",
                content=[{"type": "text", "text": TEXT}],
            )
            for p in passes
            for n in range(MESSAGES)
        ],
        batch_size=500,
    )
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=r, kind=kind, message=f"{kind} {TEXT}")
            for r in runs
            for kind in ("started", "finished")[:EVENTS]
        ],
        batch_size=500,
    )
    _screenshots(runs[:screenshots])
    _snapshots(passes, blobs, tag)
    return runs


def _screenshots(runs: list[Run]) -> None:
    for run in runs:
        for n in range(STEPS):
            path = Path(settings.RYSH_SCREENSHOTS_DIR) / f"{run.pk}/1-{n + 1}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\xff\xd8jpeg" + bytes(1000 + run.pk % 100))


def _snapshots(passes: list[Pass], blobs: int, tag: str) -> None:
    """One result file per pass: `blobs` distinct contents shared round-robin (0: none kept)."""
    if not blobs:
        return
    made = []
    for b in range(blobs):
        data = f"# result {tag} {b}\n".encode() * (50 + b)
        sha = f"{tag}-{b}".encode().hex().ljust(64, "0")[:64]
        path = blob_path(sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        made.append(ResultBlob(sha256=sha, size=len(data)))
    made = ResultBlob.objects.bulk_create(made)
    now = timezone.now()
    PassResult.objects.bulk_create(
        [
            PassResult(run_pass=p, name="results.md", blob=made[i % blobs], size=made[i % blobs].size, modified_at=now)
            for i, p in enumerate(passes)
        ],
        batch_size=500,
    )
    Pass.objects.filter(pk__in=[p.pk for p in passes]).update(snapshot_at=now)
