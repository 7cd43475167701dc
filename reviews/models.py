"""Change requests: a recipe edit committed to a review branch, discussed, then merged."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from rysh_site.models import Dated


class ChangeState(models.TextChoices):
    OPEN = "open"
    CHANGES_REQUESTED = "changes requested"
    MERGING = "merging"  # claimed by one approver; see change_request_approve
    MERGED = "merged"
    CONFLICT = "conflict"  # the tracked branch moved and the merge conflicts; branch kept
    CLOSED = "closed"


OPEN_STATES = (ChangeState.OPEN, ChangeState.CHANGES_REQUESTED, ChangeState.CONFLICT)


class ChangeAction(models.TextChoices):
    EDIT = "edit"
    CREATE = "create"
    RENAME = "rename"
    DELETE = "delete"


class ChangeRequest(Dated):
    title = models.CharField(max_length=300)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="change_requests"
    )
    action = models.CharField(max_length=10, choices=ChangeAction.choices)
    kind = models.CharField(max_length=8)
    name = models.CharField(max_length=200)  # the recipe as it is on the tracked branch
    new_name = models.CharField(max_length=200, blank=True)  # rename: the name it will have
    path = models.CharField(max_length=500)  # blank for create
    new_path = models.CharField(max_length=500)  # blank for delete

    repo = models.CharField(max_length=500)
    target_branch = models.CharField(max_length=200)
    branch = models.CharField(max_length=300, blank=True)  # rysh/cr-<id>-<slug>
    base_sha = models.CharField(max_length=64)  # the tracked branch when the change was made
    head_sha = models.CharField(max_length=64, blank=True)  # the review branch's tip
    # snapshots, so the page reads no git: the file at base and as proposed ("" = absent)
    base_text = models.TextField(blank=True)
    proposed_text = models.TextField(blank=True)

    state = models.CharField(max_length=20, choices=ChangeState.choices, default=ChangeState.OPEN, db_index=True)
    conflicts = models.JSONField(default=list, blank=True)  # paths, when state is conflict
    merged_sha = models.CharField(max_length=64, blank=True)
    merged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    merged_at = models.DateTimeField(null=True, blank=True)
    # created_at, updated_at: Dated (rysh_site/models.py)

    class Meta:
        db_table = "automations_changerequest"  # named before the apps split (see migrations/0001)
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"change request #{self.pk}: {self.title}"

    @property
    def target(self) -> str:
        return f"{self.kind}/{self.new_name or self.name}"

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES


class Verdict(models.TextChoices):
    COMMENT = "comment"
    APPROVE = "approve"
    REQUEST_CHANGES = "request changes"
    UPDATE = "update"  # the author pushed a new revision
    EVENT = "event"  # merged, conflict, closed: said by the app


class ReviewComment(models.Model):
    change_request = models.ForeignKey(ChangeRequest, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    verdict = models.CharField(max_length=20, choices=Verdict.choices, default=Verdict.COMMENT)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "automations_reviewcomment"  # named before the apps split (see migrations/0001)
        ordering = ["created_at", "id"]
