"""Working copies (docs/coding-loops.md): armed with a run, made by the worker, measured at every pass's
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
from catalogue.repo import RepoError, open_repo
from workspaces import copies
from workspaces.copies import BranchMoved, Copy, CopyError
from workspaces.destination import Destination, destination_of
from workspaces.models import Workspace, WorkspacePass, WorkspaceState, installation_key
from workspaces.signals import workspace_noted
from workspaces.source import Source, SourceError, source_for

if TYPE_CHECKING:  # the run a copy belongs to; runs sits above workspaces
    from runs.models import Run

log = logging.getLogger(__name__)
ON_DISK = (WorkspaceState.ACTIVE, WorkspaceState.KEPT)
# who the restorable points' commits are by (docs/forks.md): fixed, so a point names no person
POINT_NAME, POINT_EMAIL = "rysh", "rysh@localhost"
POINT_REFS = "refs/rysh/"


class WorkspaceRefused(Exception):
    """A keep, discard or arming that cannot be done; the message says why and what to do."""


def branch_for(run: Run) -> str:
    """The run's own branch; the installation's key keeps two databases that both count runs
    from 1 off each other's branches in a repository they share."""
    return f"rysh/{run.name}/{installation_key()}-run-{run.pk}"


def workspace_source(
    *, target: str, recipe_path: str, workdir: str, base: str | None, catalogue: bool, asked: str = "base"
) -> Source:
    """Where a run's copy would start, resolved now (a mirror fetched first): the head of
    `base` or, without one, of the recipes branch (a recipe file: its repository's HEAD).
    `asked` names where `base` came from in a refusal (`base` of the recipe, or `--base`)."""
    try:
        source = source_for(recipe_path=recipe_path, ref=base, catalogue=catalogue, fetch=True)
    except SourceError as exc:
        said = f"{asked} {base!r}: {exc}" if base else f"workdir: {exc}"
        raise WorkspaceRefused(f"{target}: {said}") from None
    if not source.has_folder(workdir):
        raise WorkspaceRefused(
            f"{target}: workdir {workdir!r} is no folder of {source.shown} at {source.commit[:8]} ({source.ref})"
        )
    return source


def point_ref(run_id: int, pass_number: int) -> str:
    """The hidden ref of a pass's restorable point: never a branch, so Keep (which pushes only
    the run's own branch) never carries it."""
    return f"{POINT_REFS}run-{run_id}/pass-{pass_number}"


def workspace_carries(run: Run | None) -> bool:
    """A resume of `run` takes its copy over (it is still on disk): nothing to resolve."""
    return run is not None and Workspace.objects.filter(run=run, state__in=ON_DISK).exists()


def workspace_arm(
    *, run: Run, workdir: str, source: Source | None, sandboxed: bool, forked: WorkspacePass | None = None
) -> Workspace:
    """The run's copy chosen at start (the copy itself is made by the worker that takes it):
    a resume carries its predecessor's copy over; a fork gets a new copy made from the
    restorable point `forked` of its parent's copy (docs/forks.md); any other run gets a fresh
    one at `source.commit` (workspace_source, resolved before the run's transaction)."""
    if forked is not None:
        return _forked(run, workdir, forked, sandboxed)
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
            base_ref=previous.base_ref,
            base_commit=previous.base_commit,
            sandboxed=sandboxed,
        )
    if source is None:  # the copy it would have carried went meanwhile (a discard, retention)
        raise WorkspaceRefused(f"{run.target}: the working copy to carry over went meanwhile; start it again")
    return Workspace.objects.create(
        run=run,
        home=str(Path(settings.RYSH_WORKSPACES_DIR) / str(run.pk)),
        workdir=workdir,
        branch=branch_for(run),
        source=source.shown,
        source_path="" if source.recipes_repo else source.location,
        base_ref=source.ref,
        base_commit=source.commit,
        sandboxed=sandboxed,
    )


def _forked(run: Run, workdir: str, point: WorkspacePass, sandboxed: bool) -> Workspace:
    """A fork's own copy, on its own branch, made (by the worker) from the parent's copy at the
    pass's point: its diff and a Keep start from that point; where Keep pushes is the parent's
    repository, as for the parent."""
    parent = point.workspace
    return Workspace.objects.create(
        run=run,
        home=str(Path(settings.RYSH_WORKSPACES_DIR) / str(run.pk)),
        workdir=workdir,
        branch=branch_for(run),
        source=parent.source,
        source_path=parent.source_path,
        base_ref=point_ref(parent.run_id, point.pass_number),
        base_commit=point.point,
        sandboxed=sandboxed,
    )


def _carried(run: Run) -> Workspace | None:
    """The copy a resume takes over: its predecessor's, when that is still on disk."""
    if run.resumed_from_id is None:
        return None
    return Workspace.objects.filter(run_id=run.resumed_from_id, state__in=ON_DISK).select_for_update().first()


def workspace_open(*, run: Run, sandboxed: bool = True) -> tuple[Workspace, Copy]:
    """The worker's side: the copy made (or taken over) on first arming, found again on a
    continue or after a lost worker, its `.git` as this worker's commands need it (`sandboxed`:
    RYSH_SANDBOX here). Raises WorkspaceRefused when it cannot be had."""
    workspace = Workspace.objects.select_related("carried_from").get(run=run)
    copy = Copy(Path(workspace.home))
    if workspace.state == WorkspaceState.PENDING:
        try:
            _make(workspace, copy)
        except (CopyError, SourceError, RepoError, OSError) as exc:
            raise WorkspaceRefused(f"the working copy could not be made: {exc}") from None
    elif workspace.state not in ON_DISK:
        raise WorkspaceRefused(f"the working copy of run #{run.pk} was {workspace.get_state_display()}")
    if not copy.exists:
        raise WorkspaceRefused(f"the working copy of run #{run.pk} is gone from {copy.home}")
    copies.prepare_git(copy, sandboxed=sandboxed)
    if workspace.sandboxed and not sandboxed:  # once unsandboxed, the run says so for good
        Workspace.objects.filter(pk=workspace.pk).update(sandboxed=False)
        workspace.sandboxed = False
    return workspace, copy


def _make(workspace: Workspace, copy: Copy) -> None:
    previous = workspace.carried_from
    if previous is not None and copy.exists:
        copies.rename_branch(copy, previous.branch, workspace.branch)
        _activate(workspace, copies.snapshot(copy, base=workspace.base_commit))
        _note(
            workspace.run,
            f"working copy carried over from run #{previous.run_id} (branch {workspace.branch}); "
            "the first pass starts from its work",
        )
        return
    location = _made_from(workspace)
    copies.create(copy.home, source=Path(location), commit=workspace.base_commit, branch=workspace.branch)
    _activate(workspace, copies.tree_of(copy, workspace.base_commit))
    _note(
        workspace.run,
        f"working copy of {workspace.source} from {workspace.base_ref or 'its commit'} at "
        f"{workspace.base_commit[:8]} on branch {workspace.branch}; the agent works in {workspace.workdir}",
    )


def _made_from(workspace: Workspace) -> str:
    """Where a new copy is fetched from: a fork's, the parent's copy (its point lives there
    only); any other's, the repository it came from."""
    if workspace.base_ref.startswith(POINT_REFS):
        parent = Workspace.objects.filter(run_id=workspace.run.forked_from_id).first()
        if parent is None or not copies.has_commit(Copy(Path(parent.home)), workspace.base_commit):
            raise CopyError(f"the restorable point {workspace.base_ref} is gone (retention removed the parent's copy)")
        return str(Copy(Path(parent.home)).git_dir)
    return workspace.source_path or str(open_repo(settings.RYSH_RECIPES_REPO).git_dir)


def _activate(workspace: Workspace, start_tree: str) -> None:
    workspace.state, workspace.start_tree, workspace.tree = WorkspaceState.ACTIVE, start_tree, start_tree
    workspace.save(update_fields=["state", "start_tree", "tree"])


def workspace_measure(*, workspace: Workspace) -> bool:
    """The copy measured now, mid-pass (after a tool call that may have written): the whole
    run's stat brought up to date for the run page. True when it changed since last measured."""
    copy = Copy(Path(workspace.home))
    tree = copies.snapshot(copy, base=workspace.base_commit)
    if tree == workspace.tree:
        return False
    whole = [s.row() for s in copies.stat(copy, workspace.base_commit, tree)]
    Workspace.objects.filter(pk=workspace.pk).update(stat=whole, tree=tree)
    workspace.stat, workspace.tree = whole, tree
    return True


def workspace_pass_ended(*, workspace: Workspace, pass_number: int) -> list[dict]:
    """The tree the pass ended with and what it changed, kept as the pass's restorable point
    (a commit on a hidden ref: docs/forks.md); the whole run's stat updated.
    Returns the whole run's stat (for the judge)."""
    copy = Copy(Path(workspace.home))
    tree = copies.snapshot(copy, base=workspace.base_commit)
    earlier = (
        WorkspacePass.objects.filter(workspace=workspace, pass_number__lt=pass_number)
        .order_by("-pass_number")
        .values_list("tree", "point")
        .first()
    )
    before = earlier[0] if earlier else workspace.start_tree
    own = [s.row() for s in copies.stat(copy, before, tree)]
    whole = [s.row() for s in copies.stat(copy, workspace.base_commit, tree)]
    point = _point(workspace, copy, tree, pass_number, parent=(earlier[1] if earlier else "") or workspace.base_commit)
    with transaction.atomic():
        WorkspacePass.objects.update_or_create(
            workspace=workspace, pass_number=pass_number, defaults={"tree": tree, "stat": own, "point": point}
        )
        Workspace.objects.filter(pk=workspace.pk).update(stat=whole, tree=tree)
    workspace.stat, workspace.tree = whole, tree
    return whole


def _point(workspace: Workspace, copy: Copy, tree: str, pass_number: int, *, parent: str) -> str:
    """The pass's restorable point; a copy whose git refuses it is said, and the pass cannot be
    forked from (its measure stands)."""
    message = f"run #{workspace.run_id}, end of pass {pass_number} (a restorable point)\n"
    try:
        return copies.point(
            copy,
            tree=tree,
            parent=parent,
            ref=point_ref(workspace.run_id, pass_number),
            message=message,
            name=POINT_NAME,
            email=POINT_EMAIL,
        )
    except CopyError as exc:
        log.warning("run %s pass %s: no restorable point: %s", workspace.run_id, pass_number, exc)
        _note(workspace.run, f"pass {pass_number}: no restorable point kept ({exc}); it cannot be forked from")
        return ""


# -- keep and discard: a person's say on the work ------------------------------------------------


def workspace_keep(*, workspace: Workspace, user=None, branch: str | None = None) -> str:
    """Commit the run's work on its branch and push it to the repository it came from, under
    `branch` or the name it was kept under before, else the run's own. Never forced: a branch
    there that holds other work is refused, with the next free name offered."""
    run = workspace.run
    _refuse_while_active(run, "keep")
    if workspace.state not in ON_DISK:
        raise WorkspaceRefused(f"run #{run.pk}: nothing to keep: its working copy was {workspace.get_state_display()}")
    target = _keep_target(workspace, branch)
    copy = Copy(Path(workspace.home))
    try:
        tree = copies.snapshot(copy, base=workspace.base_commit)
        if tree == copies.tree_of(copy, workspace.base_commit):
            raise WorkspaceRefused(
                f"run #{run.pk}: no change in its working copy since {workspace.base_commit[:8]}: "
                "nothing to keep, and no branch was made"
            )
        _refuse_unshowable(workspace, copy, tree)
        sha = _commit(workspace, copy, user)
        if workspace.state == WorkspaceState.KEPT and (sha, target) == (workspace.kept_commit, workspace.kept_branch):
            return f"run #{run.pk}: already kept as {sha[:8]} on {target}; nothing changed since"
        destination = destination_of(workspace)
        _refuse_onto_other_work(workspace, copy, destination, sha, target)
        destination.push(copy, commit=sha, branch=target)
    except BranchMoved:
        raise WorkspaceRefused(_taken(workspace, target, _free_name(workspace, copy, target))) from None
    except (CopyError, RepoError, OSError) as exc:
        raise WorkspaceRefused(f"run #{run.pk}: keep failed: {exc}") from None
    return _kept(workspace, user, sha=sha, tree=tree, target=target, destination=destination)


def _keep_target(workspace: Workspace, branch: str | None) -> str:
    """The branch the work goes to: a person's name must be a branch name under rysh/ (the
    work never lands on a branch a team works on), and is never the recipes branch."""
    if not branch:
        return workspace.kept_branch or workspace.branch
    branch = branch.strip()
    if not branch.startswith("rysh/") or not copies.valid_branch(branch):
        raise WorkspaceRefused(
            f"run #{workspace.run_id}: branch {branch!r}: expected a branch name under rysh/ "
            f"(e.g. {workspace.branch}-2)"
        )
    return branch


def _commit(workspace: Workspace, copy: Copy, user) -> str:
    """The tree as it stands, committed on the copy's own branch (its tip when nothing changed)."""
    run = workspace.run
    who = getattr(user, "get_username", lambda: "")() or "rysh"
    email = getattr(user, "email", "") or f"{who}@rysh.invalid"
    message = f"{run.target}: run #{run.pk} ({run.cause or run.state_label})\n\nKept by {who} from the rysh dashboard."
    return copies.commit(
        copy, branch=workspace.branch, message=message, name=who, email=email, base=workspace.base_commit
    )


def _refuse_unshowable(workspace: Workspace, copy: Copy, tree: str) -> None:
    """Keep commits what the Changes page shows: work whose diff git cannot show (the page and
    the judge's stat fail alike) was seen by nobody, and is not committed."""
    try:
        copies.stat(copy, workspace.base_commit, tree)  # reads every changed file, as the diff does
    except CopyError as exc:
        raise WorkspaceRefused(
            f"run #{workspace.run_id}: not kept: its diff cannot be shown ({exc}), so nobody could see "
            "what would be committed; nothing was committed or pushed"
        ) from None


def _refuse_onto_other_work(workspace: Workspace, copy: Copy, destination: Destination, sha: str, target: str):
    """A branch of that name that is not in the kept commit's history holds work of its own
    (another installation's run, a person's commits): refused before anything is pushed."""
    tip = destination.tips(copy, target).get(target)
    if tip and tip != sha and not copies.contains(copy, tip, sha):
        raise BranchMoved(target)


def _free_name(workspace: Workspace, copy: Copy, target: str) -> str:
    """The first of `target-2`, `target-3`… that the destination does not have (remembered on
    the copy: the run page offers it)."""
    try:
        taken = destination_of(workspace).tips(copy, target)
    except (CopyError, RepoError):
        taken = {}
    number = 2
    while f"{target}-{number}" in taken:
        number += 1
    offered = f"{target}-{number}"
    Workspace.objects.filter(pk=workspace.pk).update(offered_branch=offered)
    workspace.offered_branch = offered
    return offered


def _taken(workspace: Workspace, target: str, offered: str) -> str:
    run = workspace.run
    return (
        f"run #{run.pk}: not kept: the branch {target} already exists in {workspace.source_path or workspace.source} "
        f"and holds commits this work does not, so it is left as it is (never overwritten). "
        f"Keep it under a new name, {offered}: on the run page (Keep as), or "
        f"`manage.py auto {run.kind} keep {run.name} --run {run.pk} --branch {offered}`"
    )


def _kept(workspace: Workspace, user, *, sha: str, tree: str, target: str, destination: Destination) -> str:
    run = workspace.run
    kept = Workspace.objects.filter(pk=workspace.pk, state__in=ON_DISK).update(
        state=WorkspaceState.KEPT,
        kept_commit=sha,
        kept_tree=tree,
        tree=tree,
        kept_branch=target,
        offered_branch="",
        kept_at=timezone.now(),
        kept_by=_person(user),
        pushed_to=destination.shown,
    )
    workspace.refresh_from_db()
    if not kept:  # retention or a discard took the copy meanwhile; the pushed branch stays
        raise WorkspaceRefused(f"run #{run.pk}: its working copy was {workspace.get_state_display()} meanwhile")
    audit_record(actor=user, action="workspace.keep", target=run, detail={"branch": target, "commit": sha[:12]})
    _note(run, f"work kept: {sha[:8]} on {target}, pushed to {destination.shown}")
    return f"run #{run.pk}: kept as {sha[:8]} on {target}; fetch it with: {destination.fetch_hint(target)}"


def workspace_discard(*, workspace: Workspace, user=None) -> str:
    """Throw the run's work away: the copy is removed. Kept work is not discarded: its branch
    holds it (refused, with how to drop that branch instead)."""
    run = workspace.run
    _refuse_while_active(run, "discard")
    if not run.is_finished:
        raise WorkspaceRefused(f"run #{run.pk} is {run.state_label}: stop it first (a continue needs its copy)")
    if workspace.state == WorkspaceState.KEPT:
        raise WorkspaceRefused(_kept_not_discarded(workspace))
    if workspace.state != WorkspaceState.ACTIVE:
        raise WorkspaceRefused(
            f"run #{run.pk}: nothing to discard: its working copy was {workspace.get_state_display()}"
        )
    copies.remove(Copy(Path(workspace.home)))
    Workspace.objects.filter(pk=workspace.pk).update(state=WorkspaceState.DISCARDED, removed_at=timezone.now())
    _points_gone(workspace)
    workspace.refresh_from_db()
    audit_record(actor=user, action="workspace.discard", target=run, detail={"branch": workspace.branch})
    _note(run, "working copy discarded")
    return f"run #{run.pk}: working copy discarded"


def _kept_not_discarded(workspace: Workspace) -> str:
    branch = workspace.kept_branch or workspace.branch
    try:
        drop = f"`{destination_of(workspace).delete_hint(branch)}`"
    except RepoError:
        drop = f"delete the branch {branch} in {workspace.pushed_to}"
    return (
        f"run #{workspace.run_id}: not discarded: its work was kept as {workspace.kept_commit[:8]} on {branch} "
        f"({workspace.pushed_to}), and a discard would not undo that. To drop the work, delete that branch: "
        f"{drop}. The working copy goes with retention (RYSH_WORKSPACE_KEEP_DAYS after the run ended)."
    )


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
    (RYSH_WORKSPACE_KEEP_DAYS), kept or not (kept work lives on its branch); none when `days`
    is 0."""
    days = settings.RYSH_WORKSPACE_KEEP_DAYS if days is None else days
    if days <= 0:
        return []
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = Workspace.objects.filter(state__in=ON_DISK, run__ended_at__lt=cutoff).select_related("run")
    return [w for w in old if w.run.is_finished]


def workspaces_prune(*, days: int | None = None, dry_run: bool = False, now=None) -> list[str]:
    """Remove the copies of runs that finished more than `days` ago (RYSH_WORKSPACE_KEEP_DAYS);
    0 keeps them all. A kept branch stays where it was pushed."""
    said = []
    for workspace in workspaces_due(days=days, now=now):
        kept = f"; kept on {workspace.kept_branch}" if workspace.state == WorkspaceState.KEPT else ""
        said.append(f"run #{workspace.run_id}: working copy {workspace.home} ({workspace.branch}{kept})")
        if dry_run:
            continue
        # a continue or a resume may take it at this very moment: only a copy still as read is taken
        if Workspace.objects.filter(pk=workspace.pk, state=workspace.state).update(
            state=WorkspaceState.REMOVED, removed_at=timezone.now()
        ):
            copies.remove(Copy(Path(workspace.home)))
            _points_gone(workspace)
    return said


def _points_gone(workspace: Workspace) -> None:
    """The copy's restorable points went with it: its passes can no longer be forked from."""
    WorkspacePass.objects.filter(workspace=workspace).update(point="")
