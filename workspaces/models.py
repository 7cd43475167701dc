"""A run's working copy (docs/coding-loops.md) and what each of its passes left in it."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import IntegrityError, models, transaction


class WorkspaceState(models.TextChoices):
    PENDING = "pending"  # armed: the commit is chosen, the copy is made when a worker takes the run
    ACTIVE = "active"  # the copy exists and is this run's
    # a person kept the work: committed and pushed as a branch, which holds it; the copy itself
    # goes with retention like any other
    KEPT = "kept"
    HANDED_OVER = "handed over"  # a resume took the copy over (see `carried_to`)
    DISCARDED = "discarded"  # a person threw the work away
    REMOVED = "removed"  # retention removed it (RYSH_WORKSPACE_KEEP_DAYS after the run ended)


class Installation(models.Model):
    """This database's own short random key, made once: kept branches carry it
    (`rysh/<name>/<key>-run-<id>`), so two installations that count runs from 1 against one
    repository never name the same branch. Random, not derived from anything secret."""

    key = models.CharField(max_length=16, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"installation {self.key}"


def new_installation_key() -> str:
    return secrets.token_hex(3)


def installation_key() -> str:
    """The key made by the data migration, or made now (a database flushed since: tests)."""
    found = Installation.objects.order_by("pk").values_list("key", flat=True).first()
    if found:
        return found
    try:
        with transaction.atomic():
            Installation.objects.create(pk=1, key=new_installation_key())
    except IntegrityError:  # another process made it first: theirs stands
        pass
    return Installation.objects.order_by("pk").values_list("key", flat=True).first()


class SetupState(models.TextChoices):
    NONE = "", "no setup"
    RUNNING = "running"  # a worker runs the recipe's `setup:` commands now
    DONE = "done"  # every command exited 0: never again in this copy (a continue, a resume)
    FAILED = "failed"  # a command failed or was killed: the run ended before its first model call


class Workspace(models.Model):
    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, related_name="workspace")
    # a resumed run takes its predecessor's copy: the next pass starts from the work
    carried_from = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="carried_to"
    )
    state = models.CharField(max_length=20, choices=WorkspaceState.choices, default=WorkspaceState.PENDING)
    home = models.CharField(max_length=1000)  # holds tree/ (the agent's) and git/ (ours)
    workdir = models.CharField(max_length=500)  # the recipe's, relative to the repository's root
    branch = models.CharField(max_length=300)  # the copy's own branch: rysh/<name>/<installation>-run-<id>
    source = models.CharField(max_length=1000)  # the repository it was copied from (as shown: no token)
    # the repository by path when the recipe was run from a file; blank: the recipes repository
    # (RYSH_RECIPES_REPO), read again from the settings so a token is never stored here
    source_path = models.CharField(max_length=1000, blank=True)
    base_ref = models.CharField(max_length=300, blank=True)  # the branch, tag or commit asked for ("main")
    base_commit = models.CharField(max_length=64)  # what it resolved to when the run was armed
    start_tree = models.CharField(max_length=64, blank=True)  # the tree when this run took the copy
    tree = models.CharField(max_length=64, blank=True)  # the tree as last measured (with `stat`)
    sandboxed = models.BooleanField(default=True)  # False: RYSH_SANDBOX=off when it ran
    # the whole run's changes as last measured: [{path, added, removed, status}]
    stat = models.JSONField(default=list, blank=True)
    kept_commit = models.CharField(max_length=64, blank=True)
    kept_tree = models.CharField(max_length=64, blank=True)  # its tree: a later change shows Keep again
    kept_branch = models.CharField(max_length=300, blank=True)  # where it went (`branch`, or a new name)
    # a keep refused because that branch holds other work: the free name offered instead
    offered_branch = models.CharField(max_length=300, blank=True)
    kept_at = models.DateTimeField(null=True, blank=True)
    kept_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    pushed_to = models.CharField(max_length=1000, blank=True)  # where keep pushed the branch (as shown)
    removed_at = models.DateTimeField(null=True, blank=True)  # discarded or pruned
    created_at = models.DateTimeField(auto_now_add=True)
    # the recipe's `setup:` in this copy (workspaces/setup.py): its state, and each command that
    # ran: [{command, exit_status, killed, seconds, output}] (output: its head and tail)
    setup_state = models.CharField(max_length=20, choices=SetupState.choices, default=SetupState.NONE, blank=True)
    setup = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"working copy of run #{self.run_id} ({self.branch})"

    @property
    def on_disk(self) -> bool:
        return self.state in (WorkspaceState.ACTIVE, WorkspaceState.KEPT)

    @property
    def changed(self) -> bool:
        """The copy differs from the commit it started from, as last measured."""
        return bool(self.stat)

    @property
    def kept_as_is(self) -> bool:
        """Kept, and nothing changed in the copy since."""
        return self.state == WorkspaceState.KEPT and bool(self.kept_tree) and self.kept_tree == self.tree


class WorkspacePass(models.Model):
    """The tree a pass ended with: per-pass diffs are between consecutive trees."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="passes")
    pass_number = models.PositiveIntegerField()
    tree = models.CharField(max_length=64)
    stat = models.JSONField(default=list, blank=True)  # this pass's own changes
    # the restorable point: a commit of `tree` on the hidden ref refs/rysh/run-<id>/pass-<n> of the
    # copy (never on a branch people keep); "" before points were kept, or once retention removed it
    point = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace", "pass_number"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "pass_number"], name="workspace_pass_unique"),
        ]
