"""django-q2 entry points of evals (queued by dotted path): ids in, a service called."""

from __future__ import annotations

from evals.grade_run import grade_case as grade
from runs.worker import drop_dead_connection


def grade_case(case_id: int) -> None:
    """Grade one case whose run ended (its own claim keeps it to one worker)."""
    drop_dead_connection()
    grade(case_id)
