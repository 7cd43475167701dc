"""Which passes of a run can be forked from (docs/forks.md, "Restorable points"): a pass that
ended, whose results snapshot is kept and, for a coding run, whose point is still in its working
copy; and what a fork cannot restore (a web run's live browser)."""

from __future__ import annotations

from pathlib import Path

from runs.models import Pass, Run
from workspaces.copies import Copy, has_commit
from workspaces.models import Workspace, WorkspacePass, WorkspaceState
from workspaces.services import POINT_REFS

BROWSER_NOT_RESTORED = (
    "a web run's point is its results and the verdict: the browser's live state (open pages, a "
    "login) cannot be restored, so a fork starts a fresh browser at the recipe's start page"
)


def fork_caveat(run: Run) -> str:
    """What a fork of `run` cannot restore, said on the fork form and the run's page ("" none)."""
    return BROWSER_NOT_RESTORED if run.kind == "web" else ""


def fork_points(run: Run) -> dict[int, str]:
    """pass number -> "" when it can be forked from, else why not (no point kept, removed by
    retention, a web run's live browser state not restorable — said, but its results fork)."""
    workspace = Workspace.objects.filter(run=run).first()
    points = {}
    if workspace is not None:
        points = {wp.pass_number: wp for wp in WorkspacePass.objects.filter(workspace=workspace)}
    start = run.fork_pass or 0
    found = {start: _start_reason(run, workspace)}
    for run_pass in run.passes.order_by("number"):
        found[run_pass.number] = _pass_reason(run, run_pass, workspace, points.get(run_pass.number))
    return found


def _start_reason(run: Run, workspace) -> str:
    if run.forked_from_id:
        return f"this run starts from run #{run.forked_from_id} at pass {run.fork_pass}: fork that run there instead"
    if workspace is not None and (workspace.carried_from_id or workspace.base_ref.startswith(POINT_REFS)):
        return f"its working copy was carried over from run #{run.resumed_from_id}: fork that run instead"
    return ""


def _pass_reason(run: Run, run_pass: Pass, workspace, point: WorkspacePass | None) -> str:
    n = run_pass.number
    if run_pass.ended_at is None:
        return f"pass {n} has not ended"
    if run.snapshots_pruned_at is not None:
        return f"pass {n}: its results were removed by retention (snapshots pruned), so they cannot be restored"
    if run_pass.snapshot_at is None:
        return f"pass {n}: its results were not kept as a snapshot, so they cannot be restored"
    if workspace is None:
        return ""
    if point is None or not point.point:
        if workspace.state == WorkspaceState.REMOVED:
            return f"pass {n}: its restorable point went with the working copy, removed by retention"
        if workspace.state == WorkspaceState.DISCARDED:
            return f"pass {n}: its restorable point went with the working copy, discarded"
        return f"pass {n}: no restorable point was kept for it"
    if not has_commit(Copy(Path(workspace.home)), point.point):
        return f"pass {n}: its restorable point is gone with the working copy (removed by retention)"
    return ""
