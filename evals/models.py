"""Suites of eval cases and what each case's run did (docs/evals.md).

A Suite runs the cases of one recipe (or of a folder in rysh's package layout) read at one commit
of the recipes repository: on the tracked branch ("main"), on a change request's review branch
("change"), or from a path given to `auto eval PATH` ("path"). Each case is a real run of the
recipe; its CaseResult keeps the grade: every failed assertion with what broke it, the rubric's
verdict, the tokens and money the ledger counted.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SuiteSide(models.TextChoices):
    MAIN = "main"  # the recipe and its cases as on the tracked branch
    CHANGE = "change"  # as on a change request's review branch
    PATH = "path"  # a folder given to `auto eval PATH` (rysh's package layout)


class SuiteState(models.TextChoices):
    RUNNING = "running"  # cases queued or running, or being graded
    DONE = "done"  # every case graded (passed, failed or errored)
    CEILING = "ceiling"  # the suite's ceiling ended a case before it could finish


class CaseState(models.TextChoices):
    PENDING = "pending"  # its run is queued or running
    GRADING = "grading"  # its run ended; assertions and rubric being checked
    PASSED = "passed"
    FAILED = "failed"  # an assertion did not hold, or the rubric said no
    ERROR = "error"  # the run could not start or ended without a result; `cause` says why
    BROKEN = "broken"  # the case's files are wrong (listed with the error, never run)


class Suite(models.Model):
    recipe = models.ForeignKey("catalogue.Recipe", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    target = models.CharField(max_length=1000)  # kind/name, or the folder of a PATH suite
    side = models.CharField(max_length=10, choices=SuiteSide.choices)
    change_request = models.ForeignKey(
        "reviews.ChangeRequest", null=True, blank=True, on_delete=models.SET_NULL, related_name="suites"
    )
    commit_sha = models.CharField(max_length=64, blank=True)  # where the recipe and cases were read
    recipe_text = models.TextField(blank=True)  # the recipe as the cases ran it
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    provider = models.CharField(max_length=20, blank=True)  # anthropic | scripted
    state = models.CharField(max_length=10, choices=SuiteState.choices, default=SuiteState.RUNNING, db_index=True)
    budget_tokens = models.BigIntegerField(default=0)  # the ceiling: the cases' worst cases summed
    tokens_counted = models.BigIntegerField(default=0)  # what the ledger counted for it (runs + rubric)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)  # the last grading (a `--result` regrade moves it)
    trace_context = models.JSONField(default=dict, blank=True)  # the suite's trace: its runs are children

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"suite #{self.pk} of {self.target} ({self.side})"


class CaseResult(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=200)  # the case's folder name
    folder = models.CharField(max_length=1000)  # the case's folder in the repository (or on disk)
    digest = models.CharField(max_length=64, blank=True)  # sha256 of the recipe text and the case's files
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    state = models.CharField(max_length=10, choices=CaseState.choices, default=CaseState.PENDING, db_index=True)
    worst_tokens = models.BigIntegerField(default=0)  # its share of the suite's ceiling
    tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    failures = models.JSONField(default=list, blank=True)  # [{"assertion": ..., "message": ...}]
    rubric_verdict = models.CharField(max_length=3, blank=True)  # YES | NO | "" (no judge.md)
    rubric_reason = models.TextField(blank=True)
    cause = models.TextField(blank=True)  # error / broken: why
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["suite_id", "name"]
        constraints = [models.UniqueConstraint(fields=["suite", "name"], name="caseresult_suite_name_unique")]

    def __str__(self) -> str:
        return f"{self.name} in {self.suite}"
