"""Reads of suites for the pages, the API and the merge gate (docs/evals.md)."""

from __future__ import annotations

from evals.models import Suite


def suites_for_change(change) -> dict[str, Suite | None]:
    """The newest suite of each side ("main", "change") for a change request."""
    raise NotImplementedError


def merge_blockers(change) -> list[str]:
    """With RYSH_REVIEW_REQUIRE_EVALS on: why `change` may not merge yet (no suite on its head,
    a suite still running, the failing cases by name); [] when it may."""
    raise NotImplementedError
