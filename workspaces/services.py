"""Working copies (SPEC §11): armed with a run, made by the worker, measured at every pass's
end, kept or discarded by a person, removed after RYSH_WORKSPACE_KEEP_DAYS.

Writes only; the run page's reads are in selectors.py. Git itself is in copies.py.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from catalogue.repo import RepoError, open_repo, redact
from workspaces import copies
from workspaces.copies import Copy, CopyError
from workspaces.models import Workspace, WorkspacePass, WorkspaceState
from workspaces.signals import workspace_noted
from workspaces.source import SourceError, source_for

if TYPE_CHECKING:  # the run a copy belongs to; runs sits above workspaces
    from runs.models import Run

log = logging.getLogger(__name__)


class WorkspaceRefused(Exception):
    """A keep, discard or arming that cannot be done; the message says why and what to do."""


def branch_for(run: Run) -> str:
    return f"rysh/{run.name}/run-{run.pk}"


def workspace_arm(*, run: Run, workdir: str, commit: str | None, sandboxed: bool) -> Workspace:
    """The run's copy chosen at start (the copy itself is made by the worker that takes it):
    a resume carries its predecessor's copy over; any other run gets a fresh one at `commit`
    (the recipe version's) or, for a recipe file, at its repository's HEAD."""
    previous = _carried(run)
    if previous is not None:
        # handed over now, in the transaction that creates the resume: the old run can no
        # longer be continued on it (two runs never share a copy)
        Workspace.objects.filter(pk=previous.pk).update(state=WorkspaceState.HANDED_OVER)
        return Workspace.objects.create(
            run=run,
            carried_from=previous,
            home=previous.home,
            workdir=workdir,
            branch=branch_for(run),
            source=previous.source,
            source_path=previous.source_path,
            base_commit=previous.base_commit,
            sandboxed=sandboxed,
        )
    try:
        source = source_for(recipe_path=run.recipe_path, commit=commit)
    except SourceError as exc:
        raise WorkspaceRefused(f"{run.target}: workdir: {exc}") from None
    if not source.has_folder(workdir):
        raise WorkspaceRefused(
            f"{run.target}: workdir {workdir!r} is no folder of {source.shown} at {source.commit[:8]}"
        )
    return Workspace.objects.create(
        run=run,
        home=str(Path(settings.RYSH_WORKSPACES_DIR) / str(run.pk)),
        workdir=workdir,
        branch=branch_for(run),
        source=source.shown,
        source_path="" if commit or not Path(run.recipe_path).is_file() else source.location,
        base_commit=source.commit,
        sandboxed=sandboxed,
    )


def _carried(run: Run) -> Workspace | None:
    """The copy a resume takes over: its predecessor's, when that is still on disk."""
    if run.resumed_from_id is None:
        return None
    return (
        Workspace.objects.filter(run_id=run.resumed_from_id, state__in=[WorkspaceState.ACTIVE, WorkspaceState.KEPT])
        .select_for_update()
        .first()
    )


def workspace_open(*, run: Run) -> tuple[Workspace, Copy]:
    """The worker's side: the copy made (or taken over) on first arming, found again on a
    continue or after a lost worker. Raises WorkspaceRefused when it cannot be had."""
    workspace = Workspace.objects.select_related("carried_from").get(run=run)
    copy = Copy(Path(workspace.home))
    if workspace.state == WorkspaceState.PENDING:
        try:
            _make(workspace, copy)
        except (CopyError, SourceError, RepoError, OSError) as exc:
            raise WorkspaceRefused(f"the working copy could not be made: {exc}") from None
    elif workspace.state not in (WorkspaceState.ACTIVE, WorkspaceState.KEPT):
        raise WorkspaceRefused(f"the working copy of run #{run.pk} was {workspace.get_state_display()}")
    if not copy.exists:
        raise WorkspaceRefused(f"the working copy of run #{run.pk} is gone from {copy.home}")
    copies.ensure_mount_point(copy)
    return workspace, copy


def _make(workspace: Workspace, copy: Copy) -> None:
    previous = workspace.carried_from
    if previous is not None and copy.exists:
        copies.rename_branch(copy, previous.branch, workspace.branch)
        _activate(workspace, copies.snapshot(copy))
        _note(
            workspace.run,
            f"working copy carried over from run #{previous.run_id} (branch {workspace.branch}); "
            "the first pass starts from its work",
        )
        return
    location = workspace.source_path or str(open_repo(settings.RYSH_RECIPES_REPO).git_dir)
    copies.create(copy.home, source=Path(location), commit=workspace.base_commit, branch=workspace.branch)
    _activate(workspace, copies.tree_of(copy, workspace.base_commit))
    _note(
        workspace.run,
        f"working copy of {workspace.source} at {workspace.base_commit[:8]} on branch {workspace.branch}; "
        f"the agent works in {workspace.workdir}",
    )


def _activate(workspace: Workspace, start_tree: str) -> None:
    workspace.state, workspace.start_tree = WorkspaceState.ACTIVE, start_tree
    workspace.save(update_fields=["state", "start_tree"])


def workspace_pass_ended(*, workspace: Workspace, pass_number: int) -> list[dict]:
    """The tree the pass ended with and what it changed; the whole run's stat updated.
    Returns the whole run's stat (for the judge)."""
    copy = Copy(Path(workspace.home))
    tree = copies.snapshot(copy)
    before = (
        WorkspacePass.objects.filter(workspace=workspace, pass_number__lt=pass_number)
        .order_by("-pass_number")
        .values_list("tree", flat=True)
        .first()
    ) or workspace.start_tree
    own = [s.row() for s in copies.stat(copy, before, tree)]
    whole = [s.row() for s in copies.stat(copy, workspace.base_commit, tree)]
    with transaction.atomic():
        WorkspacePass.objects.update_or_create(
            workspace=workspace, pass_number=pass_number, defaults={"tree": tree, "stat": own}
        )
        Workspace.objects.filter(pk=workspace.pk).update(stat=whole)
    workspace.stat = whole
    return whole


def workspace_keep(*, workspace: Workspace, user=None) -> str:
    """Commit the run's work on its branch and push the branch to the repository it came from
    (a new branch there, never forced; the copy stays and retention leaves it alone)."""
    run = workspace.run
    _refuse_while_active(run, "keep")
    if workspace.state not in (WorkspaceState.ACTIVE, WorkspaceState.KEPT):
        raise WorkspaceRefused(f"run #{run.pk}: nothing to keep: its working copy was {workspace.get_state_display()}")
    copy = Copy(Path(workspace.home))
    who = getattr(user, "get_username", lambda: "")() or "rysh"
    email = getattr(user, "email", "") or f"{who}@rysh.invalid"
    message = f"{run.target}: run #{run.pk} ({run.cause or run.state_label})\n\nKept by {who} from the rysh dashboard."
    try:
        sha = copies.commit(copy, branch=workspace.branch, message=message, name=who, email=email)
        pushed = _push(workspace, copy)
    except (CopyError, RepoError, OSError) as exc:
        raise WorkspaceRefused(f"run #{run.pk}: keep failed: {exc}") from None
    kept = Workspace.objects.filter(pk=workspace.pk, state__in=[WorkspaceState.ACTIVE, WorkspaceState.KEPT]).update(
        state=WorkspaceState.KEPT, kept_commit=sha, kept_at=timezone.now(), kept_by=_person(user), pushed_to=pushed
    )
    workspace.refresh_from_db()
    if not kept:  # retention or a discard took the copy meanwhile; the pushed branch stays
        raise WorkspaceRefused(f"run #{run.pk}: its working copy was {workspace.get_state_display()} meanwhile")
    audit_record(
        actor=user, action="workspace.keep", target=run, detail={"branch": workspace.branch, "commit": sha[:12]}
    )
    _note(run, f"work kept: {sha[:8]} on {workspace.branch}" + (f", pushed to {pushed}" if pushed else ""))
    return f"run #{run.pk}: kept as {sha[:8]} on {workspace.branch}" + (
        f"; fetch it with: git fetch {pushed} {workspace.branch}" if pushed else ""
    )


def _push(workspace: Workspace, copy: Copy) -> str:
    """Where the branch went (as shown), or "" when it stays in the copy."""
    if workspace.source_path:
        copies.push(copy, branch=workspace.branch, destination=workspace.source_path)
        return workspace.source_path
    repo = open_repo(settings.RYSH_RECIPES_REPO)
    ref = f"refs/heads/{workspace.branch}"
    with repo.lock():
        repo.git("fetch", "--quiet", "--no-tags", str(copy.git_dir), f"+{ref}:{ref}")
        if repo.remote:
            done = repo.git("push", "--quiet", "--porcelain", "origin", f"{ref}:{ref}", ok=(0, 1, 128))
            if done.returncode:
                said = redact(done.stderr or done.stdout).strip().splitlines()
                raise RepoError(f"push to {repo.shown} failed: {said[-1] if said else done.returncode}")
    return repo.shown


def workspace_discard(*, workspace: Workspace, user=None) -> str:
    """Throw the run's work away: the copy is removed (a kept branch stays where it was pushed)."""
    run = workspace.run
    _refuse_while_active(run, "discard")
    if not run.is_finished:
        raise WorkspaceRefused(f"run #{run.pk} is {run.state_label}: stop it first (a continue needs its copy)")
    if workspace.state not in (WorkspaceState.ACTIVE, WorkspaceState.KEPT):
        raise WorkspaceRefused(
            f"run #{run.pk}: nothing to discard: its working copy was {workspace.get_state_display()}"
        )
    copies.remove(Copy(Path(workspace.home)))
    Workspace.objects.filter(pk=workspace.pk).update(state=WorkspaceState.DISCARDED, removed_at=timezone.now())
    workspace.refresh_from_db()
    audit_record(actor=user, action="workspace.discard", target=run, detail={"branch": workspace.branch})
    _note(run, "working copy discarded")
    return f"run #{run.pk}: working copy discarded"


def _refuse_while_active(run: Run, verb: str) -> None:
    run.refresh_from_db(fields=["state", "pause_reason", "cause"])
    if run.is_working:
        raise WorkspaceRefused(f"run #{run.pk} is {run.state_label}: {verb} its work once it pauses or ends")


def _note(run: Run, message: str) -> None:
    workspace_noted.send(sender=Workspace, run=run, message=message)


def _person(user):
    return user if getattr(user, "is_authenticated", False) else None


def workspaces_due(*, days: int | None = None, now=None) -> list[Workspace]:
    """The copies retention removes next: of runs that finished more than `days` ago
    (RYSH_WORKSPACE_KEEP_DAYS) and that nobody kept; none when `days` is 0."""
    days = settings.RYSH_WORKSPACE_KEEP_DAYS if days is None else days
    if days <= 0:
        return []
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = Workspace.objects.filter(state=WorkspaceState.ACTIVE, run__ended_at__lt=cutoff).select_related("run")
    return [w for w in old if w.run.is_finished]


def workspaces_prune(*, days: int | None = None, dry_run: bool = False, now=None) -> list[str]:
    """Remove the copies of runs that finished more than `days` ago (RYSH_WORKSPACE_KEEP_DAYS)
    and nobody kept; 0 keeps them all."""
    said = []
    for workspace in workspaces_due(days=days, now=now):
        said.append(f"run #{workspace.run_id}: working copy {workspace.home} ({workspace.branch})")
        if dry_run:
            continue
        # a person may keep it at this very moment: only an ACTIVE copy is taken
        if Workspace.objects.filter(pk=workspace.pk, state=WorkspaceState.ACTIVE).update(
            state=WorkspaceState.REMOVED, removed_at=timezone.now()
        ):
            copies.remove(Copy(Path(workspace.home)))
    return said
