from __future__ import annotations

from django.db import models


class RepoState(models.Model):
    """The last commit of a tracked branch that sync has read, so sync can be incremental."""

    repo = models.CharField(max_length=500)
    branch = models.CharField(max_length=200)
    synced_sha = models.CharField(max_length=64, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "automations_repostate"  # named before the apps split (see migrations/0001)
        constraints = [models.UniqueConstraint(fields=["repo", "branch"], name="repo_branch_unique")]


class Recipe(models.Model):
    """One recipe target (`web/halilagin-medium`); its text lives in RecipeVersions."""

    kind = models.CharField(max_length=8)  # web | task | code
    name = models.CharField(max_length=200)
    path = models.CharField(max_length=500)
    archived = models.BooleanField(default=False)  # the file was deleted; history is kept
    latest = models.ForeignKey(
        "RecipeVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # newest version, valid or not
    good = models.ForeignKey(
        "RecipeVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # the last valid version: the one that runs

    class Meta:
        db_table = "automations_recipe"  # named before the apps split (see migrations/0001)
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="recipe_kind_name_unique")]
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def target(self) -> str:
        return f"{self.kind}/{self.name}"


class RecipeVersion(models.Model):
    recipe = models.ForeignKey(Recipe, on_delete=models.CASCADE, related_name="versions")
    commit_sha = models.CharField(max_length=64)
    author = models.CharField(max_length=300, blank=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    message = models.TextField(blank=True)
    path = models.CharField(max_length=500)
    text = models.TextField()
    blob_sha = models.CharField(max_length=64, blank=True)  # git's id of the file's content
    valid = models.BooleanField(default=False)
    errors = models.JSONField(default=list, blank=True)  # str(RecipeIssue) lines when invalid
    # when valid: the parsed RecipeSpec (dataclasses.asdict) and what the list shows of its
    # resolved plan (worst_tokens, passes, money, models), so a page of 1,000 recipes parses nothing
    spec = models.JSONField(default=dict, blank=True)
    plan = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "automations_recipeversion"  # named before the apps split (see migrations/0001)
        constraints = [models.UniqueConstraint(fields=["recipe", "commit_sha"], name="version_recipe_commit_unique")]
        ordering = ["-committed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.recipe} @ {self.commit_sha[:8]}"


class GitDelivery(models.Model):
    """One signed request to the push hook (/hooks/git/), whatever became of it: what the recipes
    page shows admins, newest first. Only the last KEEP are kept (catalogue.hooks). A request
    refused before it was trusted is counted in GitHookRefusal instead, so no flood of them can
    push a real delivery out."""

    ACCEPTED, IGNORED, REFUSED, FAILED = "accepted", "ignored", "refused", "failed"

    received_at = models.DateTimeField()
    forge = models.CharField(max_length=16, blank=True)  # github | gitlab | gitea | forgejo; "" unknown
    event = models.CharField(max_length=100, blank=True)
    delivery_id = models.CharField(max_length=100, blank=True)
    ref = models.CharField(max_length=300, blank=True)
    outcome = models.CharField(max_length=10)
    reason = models.CharField(max_length=300, blank=True)
    status = models.PositiveSmallIntegerField()  # the HTTP status the forge was answered with
    sync = models.CharField(max_length=500, blank=True)  # the sync's line, or its (redacted) error
    # the id of the delivery this one repeats; a number, not a key: old rows are pruned first
    duplicate_of = models.PositiveBigIntegerField(null=True, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    # SHA-256 of the signed body: a body seen within the hour under another delivery id is a replay
    body_sha256 = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # A delivery id is claimed by the first delivery that was signed and acted on (or
            # ignored): a redelivery finds it taken and syncs nothing. Refused requests claim
            # nothing (an unsigned request must not be able to block a real id), and a failed
            # sync lets go of its id, so redelivering it from the forge syncs again.
            models.UniqueConstraint(
                fields=["forge", "delivery_id"],
                condition=models.Q(outcome__in=["accepted", "ignored"], duplicate_of__isnull=True)
                & ~models.Q(delivery_id=""),
                name="git_delivery_once",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.forge} {self.outcome}"


class GitHookRefusal(models.Model):
    """Requests to the push hook refused before anything in them was trusted — the hook off, a body
    too large, unsigned or badly signed, a replayed body — counted per day, forge and reason
    rather than stored one by one (catalogue.hooks): the reasons are the hook's own words, so a
    flood adds to a few counters and never pushes a real delivery out of the log."""

    day = models.DateField()
    forge = models.CharField(max_length=16, blank=True)
    reason = models.CharField(max_length=300)
    status = models.PositiveSmallIntegerField()
    count = models.PositiveIntegerField(default=0)
    last_at = models.DateTimeField()
    last_address = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-day", "-last_at"]
        constraints = [
            models.UniqueConstraint(fields=["day", "forge", "reason", "status"], name="git_hook_refusal_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.reason} ×{self.count}"


class Package(models.Model):
    """One of rysh's packages, `.rysh/packages/<name>/` in the recipes repository
    (docs/packages.md); its files live in PackageVersions. Like a recipe's, the version that
    runs is the last valid one: a broken manifest or SKILL.md never replaces it."""

    name = models.CharField(max_length=200, unique=True)  # the folder's name
    archived = models.BooleanField(default=False)  # the folder was deleted; history is kept
    latest = models.ForeignKey(
        "PackageVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # newest version, valid or not
    good = models.ForeignKey(
        "PackageVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # the last valid version: the one that runs

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def path(self) -> str:
        return f".rysh/packages/{self.name}"


class PackageVersion(models.Model):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="versions")
    commit_sha = models.CharField(max_length=64)
    author = models.CharField(max_length=300, blank=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    message = models.TextField(blank=True)
    # git's ids of the folder's files (path inside the folder -> blob): what tells a change
    files = models.JSONField(default=dict, blank=True)
    manifest_text = models.TextField(blank=True)
    entry_path = models.CharField(max_length=500, blank=True)  # inside the folder: SKILL.md
    entry_text = models.TextField(blank=True)
    valid = models.BooleanField(default=False)
    errors = models.JSONField(default=list, blank=True)  # str(RecipeIssue) lines when invalid
    # when valid, what the pages show without parsing: name, version, type, description, tools,
    # evals, and the agent's model, isolation and auto_approve (catalogue.package_sync)
    info = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["package", "commit_sha"], name="package_version_commit_unique")]
        ordering = ["-committed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.package} @ {self.commit_sha[:8]}"

    @property
    def label(self) -> str:
        """`@rysh/test-fixer@0.1.0`, or the folder's name when the manifest did not read."""
        if self.info.get("name"):
            return f"{self.info['name']}@{self.info.get('version', '')}"
        return self.package.name
