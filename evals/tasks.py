"""django-q2 entry points of evals (queued by dotted path): ids in, a service called."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager

from evals.grade_run import grade_case as grade
from runs.worker import drop_dead_connection


def grade_case(case_id: int) -> None:
    """Grade one case whose run ended (its own claim keeps it to one worker)."""
    drop_dead_connection()
    with children_allowed():
        grade(case_id)


@contextmanager
def children_allowed() -> Iterator[None]:
    """django-q2's workers are daemonic processes, and multiprocessing refuses a daemonic process
    any child ("daemonic processes are not allowed to have children"); grading searches
    `output_matches` in a forked child under a time bound (evals.grading). The worker is marked
    non-daemonic while it grades (the child is daemonic itself, and joined or killed before the
    grading goes on), then as it was."""
    me = multiprocessing.current_process()
    was = me.daemon
    me.daemon = False
    try:
        yield
    finally:
        me.daemon = was
