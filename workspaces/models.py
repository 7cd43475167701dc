"""A run's working copy (SPEC §11) and what each of its passes left in it."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WorkspaceState(models.TextChoices):
    PENDING = "pending"  # armed: the commit is chosen, the copy is made when a worker takes the run
    ACTIVE = "active"  # the copy exists and is this run's
    KEPT = "kept"  # a person kept the work: committed on its branch (and pushed); never pruned
    HANDED_OVER = "handed over"  # a resume took the copy over (see `carried_to`)
    DISCARDED = "discarded"  # a person threw the work away
    REMOVED = "removed"  # retention removed it (RYSH_WORKSPACE_KEEP_DAYS after the run ended)


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
    branch = models.CharField(max_length=300)  # rysh/<name>/run-<id>
    source = models.CharField(max_length=1000)  # the repository it was copied from (as shown: no token)
    # the repository by path when the recipe was run from a file; blank: the recipes repository
    # (RYSH_RECIPES_REPO), read again from the settings so a token is never stored here
    source_path = models.CharField(max_length=1000, blank=True)
    base_commit = models.CharField(max_length=64)  # the commit the run was armed with
    start_tree = models.CharField(max_length=64, blank=True)  # the tree when this run took the copy
    sandboxed = models.BooleanField(default=True)  # False: RYSH_SANDBOX=off when it ran
    # the whole run's changes as last measured: [{path, added, removed, status}]
    stat = models.JSONField(default=list, blank=True)
    kept_commit = models.CharField(max_length=64, blank=True)
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


class WorkspacePass(models.Model):
    """The tree a pass ended with: per-pass diffs are between consecutive trees."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="passes")
    pass_number = models.PositiveIntegerField()
    tree = models.CharField(max_length=64)
    stat = models.JSONField(default=list, blank=True)  # this pass's own changes
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace", "pass_number"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "pass_number"], name="workspace_pass_unique"),
        ]
