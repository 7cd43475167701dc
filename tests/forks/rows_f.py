"""Run rows for the fork pages' tests (helper of test_compare, test_fork_pages, test_propose_edit):
a parent run and its forks as the database holds them, passes with verdicts, tokens and result
snapshots taken from real files."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from django.utils import timezone

from runs.models import LedgerEntry, Pass, Run
from runs.results import snapshots

RECIPE = """---
loop:
  do:
    budget:
      size: 4b
  while:
    max_iterations: 6
    budget: 20b
    prompts:
      until: The report exists.
---
Write the report.
"""


def run_row(*, name: str = "job", text: str = RECIPE, parent: Run | None = None, fork_pass=None, **fields) -> Run:
    return Run.objects.create(
        kind="task",
        name=name,
        target=f"task/{name}",
        slot=f"task/{name}#{Run.objects.count()}",
        recipe_path=f".rysh/automations/tasks/{name}.md",
        recipe_text=text,
        provider="scripted",
        executor_model="claude-sonnet-4-5",
        judge_model="claude-sonnet-4-5",
        output_dir="results",
        state="finished",
        forked_from=parent,
        fork_pass=fork_pass,
        **fields,
    )


def pass_row(
    run: Run,
    number: int,
    *,
    verdict: str = "NO",
    tokens: int = 1000,
    cost: str | None = "0.01",
    files: dict[str, str] | None = None,
    folder: Path | None = None,
) -> Pass:
    start = timezone.now()
    p = Pass.objects.create(run=run, number=number, verdict=verdict, tokens_counted=tokens, ended_at=start)
    Pass.objects.filter(pk=p.pk).update(started_at=start - timedelta(seconds=10 * number))
    p.refresh_from_db()
    LedgerEntry.objects.create(
        run=run,
        pass_number=number,
        purpose="task",
        model="claude-sonnet-4-5",
        counted_tokens=tokens,
        cost=Decimal(cost) if cost else None,
    )
    if files is not None:
        assert folder is not None
        for name, content in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        snapshots.snapshot_pass(p, folder, since=None)
    return p
