"""git -> the catalogue: Recipe and RecipeVersion rows from the tracked branch (docs/recipes.md).

Incremental: the RepoState remembers the last synced commit; a later sync walks only the
commits since (`git log synced..head`, first-parent line, so every change that reached the
branch — ours or pushed from outside — becomes a version with its author, date and message) and
reads only the files those commits touched. A synced commit that is no longer an ancestor of
the head (a rewritten history) falls back to a full read of the head's history.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from budgets.plan import resolve
from budgets.prices import format_money
from budgets.units import format_tokens
from catalogue.chain_checks import chains_deferred, chains_recheck
from catalogue.checks import extra_issues
from catalogue.models import Recipe, RecipeVersion, RepoState
from catalogue.package_sync import packages_sync
from catalogue.plan_report import models_for, worst_case_money, wrapup_for
from catalogue.recipe import RecipeError, RecipeIssue, parse_recipe
from catalogue.repo import Change, Commit, GitRepo, RepoError, open_repo, redact, split_recipe_path
from catalogue.signals import recipes_synced
from catalogue.spec import Kind
from rysh_site.chunks import chunks

log = logging.getLogger(__name__)
SYNC_CHUNK = 500  # names or commits one query reads at a time

__all__ = ["SyncResult", "recipes_sync", "recipe_for_run", "parse_version", "RepoError"]


@dataclass(frozen=True)
class SyncResult:
    recipes: int  # active recipes in the catalogue after the sync
    changed: int  # recipes created, changed, archived or restored by this sync
    invalid: int  # active recipes whose newest version does not parse
    seconds: float
    head: str = ""
    versions: int = 0  # versions created
    files_read: int = 0  # file contents read from git
    packages_changed: int = 0  # packages (.rysh/packages/) created, changed or archived

    def line(self) -> str:
        packages = f", {self.packages_changed} package{'s' * (self.packages_changed != 1)} changed"
        return (
            f"synced: {self.recipes} recipes, {self.changed} changed, {self.invalid} invalid"
            f"{packages if self.packages_changed else ''}, {self.seconds:.2f}s"
        )


@dataclass
class _Seen:
    """What the walk learned about one recipe path, in commit order."""

    kind: Kind
    name: str
    path: str
    versions: list  # unsaved RecipeVersion rows, oldest first
    exists: bool = True


def recipes_sync(*, repo: str | None = None, branch: str | None = None) -> SyncResult:
    """Bring the catalogue to the head of the tracked branch. Safe to run twice at once: the
    second either finds nothing left to do or loses the RepoState claim and starts over."""
    started = time.monotonic()
    location = repo or settings.RYSH_RECIPES_REPO
    branch = branch or settings.RYSH_RECIPES_BRANCH
    git = open_repo(location)
    git.refresh(branch)
    head = git.head(branch)
    # keyed by the redacted location: no token in the database, and a new token is no new repo
    state, _ = RepoState.objects.get_or_create(repo=redact(location), branch=branch)
    for _attempt in range(5):
        since = state.synced_sha
        if since == head:
            return _result(started, head, changed=0, versions=0, files_read=git.blobs_read)
        incremental = bool(since) and git.has_commit(since) and git.is_ancestor(since, head)
        with chains_deferred():  # a recipe a chain names may come later in this same walk
            walked = _walk(git, since if incremental else None, head)
        chains_recheck(walked.values())
        with transaction.atomic():
            # The claim: only the sync that moves synced_sha from what it read applies this
            # range; a concurrent sync of the same range updates 0 rows and starts over (and
            # then finds synced_sha == head). The row lock is held until commit, so the
            # versions below are written by one sync only.
            claimed = RepoState.objects.filter(pk=state.pk, synced_sha=since).update(synced_sha=head)
            if claimed:
                changed, created = _apply(walked, full=not incremental)
                packages = packages_sync(git, head)  # .rysh/packages/ (docs/packages.md)
                RepoState.objects.filter(pk=state.pk).update(synced_at=timezone.now())
        if claimed:
            # schedules follow recipes' `schedule:`; policies read .rysh/policy.yaml at the head
            recipes_synced.send(sender=RepoState, git=git, repo=redact(location), branch=branch, head=head)
            result = _result(started, head, changed=changed, versions=created, files_read=git.blobs_read)
            return dataclasses.replace(result, packages_changed=packages)
        state.refresh_from_db()
    raise RepoError(f"{redact(location)}: gave up after repeated concurrent syncs")


def recipe_for_run(*, kind: str, name: str) -> tuple[Recipe, RecipeVersion] | None:
    """The recipe and the version that runs: its last valid one, even when a newer version is
    broken. None when it is not in the catalogue, archived, or has never been valid."""
    recipe = Recipe.objects.select_related("good").filter(kind=kind, name=name, archived=False).first()
    if recipe is None or recipe.good is None:
        return None
    return recipe, recipe.good


def parse_version(text: str, *, path: str, kind: str, name: str) -> dict:
    """A version's parsed fields: valid, errors, spec and plan (for RecipeVersion(**…))."""
    try:
        spec = parse_recipe(text, path=path, kind=kind, name=name)
    except RecipeError as exc:
        return {"valid": False, "errors": [str(i) for i in exc.issues], "spec": {}, "plan": {}}
    if extra := extra_issues(spec):  # what needs the database, e.g. notify: channels (catalogue.checks)
        return {"valid": False, "errors": [str(i) for i in extra], "spec": {}, "plan": {}}
    plan = resolve(spec.do, spec.loop_while)
    executor, judge = models_for(spec)
    money = worst_case_money(plan, executor=executor, judge=judge, wrapup=wrapup_for(spec, executor))
    return {
        "valid": True,
        "errors": [],
        "spec": dataclasses.asdict(spec),
        "plan": {
            "worst_tokens": plan.worst_tokens,
            "worst_display": format_tokens(plan.worst_tokens),
            "worst_money": format_money(money),
            "money": str(money) if money is not None else None,
            "passes": plan.passes,
            "executor": executor,
            "judge": judge,
            "summary": plan.summary_lines(),
            "warnings": [*spec.warnings, *plan.warnings],
        },
    }


# --- reading git ------------------------------------------------------------------------------


def _walk(git: GitRepo, since: str | None, head: str) -> dict[str, _Seen]:
    """Every recipe path touched since `since`, with a version per commit that changed it,
    reconciled with the head so the last version always is the file as the head has it."""
    commits = git.log(since, head)
    final = {c.path: c for c in git.changes(since, head) if split_recipe_path(c.path)}
    touched = [(commit, change) for commit in commits for change in commit.changes if split_recipe_path(change.path)]
    # A file that only ever appears in the final state (a history the first-parent walk does
    # not fully explain) is attributed to the head commit.
    head_commit = None
    blobs = git.read_blobs(
        [c.blob for _, c in touched if c.status != "D"] + [c.blob for c in final.values() if c.status != "D"]
    )
    seen: dict[str, _Seen] = {}
    for commit, change in touched:
        _record(seen, commit, change, blobs)
    for path, change in final.items():
        entry = seen.get(path)
        last = entry.versions[-1] if entry and entry.versions else None
        if change.status == "D":
            if entry is None:
                folder, name = split_recipe_path(path)
                seen[path] = _Seen(Kind.of_folder(folder), name, path, [], exists=False)
            else:
                entry.exists = False
        elif last is None or last.blob_sha != change.blob or not entry.exists:
            head_commit = head_commit or git.commit(head)
            _record(seen, head_commit, change, blobs)
    return seen


def _record(seen: dict[str, _Seen], commit: Commit, change: Change, blobs: dict) -> None:
    folder, name = split_recipe_path(change.path)
    kind = Kind.of_folder(folder)
    entry = seen.setdefault(change.path, _Seen(kind, name, change.path, []))
    if change.status == "D":
        entry.exists = False
        return
    entry.exists = True
    if any(v.commit_sha == commit.sha for v in entry.versions):
        entry.versions = [v for v in entry.versions if v.commit_sha != commit.sha]
    text, decode_error = _decode(blobs[change.blob], change.path)
    fields = (
        parse_version(text, path=change.path, kind=kind, name=name)
        if decode_error is None
        else {"valid": False, "errors": [decode_error], "spec": {}, "plan": {}}
    )
    entry.versions.append(
        RecipeVersion(
            commit_sha=commit.sha,
            author=commit.author,
            committed_at=commit.date,
            message=commit.message,
            path=change.path,
            text=text,
            blob_sha=change.blob,
            **fields,
        )
    )


def _decode(data: bytes, path: str) -> tuple[str, str | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        label = path.rsplit("/", 1)[-1]
        issue = RecipeIssue(label, None, "file", f"is not UTF-8 text ({exc.reason} at byte {exc.start})")
        return data.decode("utf-8", errors="replace"), str(issue)


# --- writing the catalogue ----------------------------------------------------------------------


def _apply(seen: dict[str, _Seen], *, full: bool) -> tuple[int, int]:
    """Write what the walk found, in a handful of queries whatever the number of recipes."""
    by_target = {(e.kind, e.name): e for e in seen.values()}
    recipes = {}
    for names in chunks(sorted({n for _, n in by_target}), SYNC_CHUNK):
        for recipe in Recipe.objects.filter(name__in=names):
            if (recipe.kind, recipe.name) in by_target:
                recipes[(recipe.kind, recipe.name)] = recipe
    # a file added and deleted again before anyone synced still leaves its history behind;
    # a deletion of something never seen leaves nothing
    new = [
        Recipe(kind=k, name=n, path=e.path) for (k, n), e in by_target.items() if (k, n) not in recipes and e.versions
    ]
    for recipe in Recipe.objects.bulk_create(new, batch_size=500):
        recipes[(recipe.kind, recipe.name)] = recipe
    ids = _version_ids(recipes, by_target)
    to_create = []
    for key, recipe in recipes.items():
        for version in by_target[key].versions:
            if (recipe.pk, version.commit_sha) not in ids:
                version.recipe = recipe
                to_create.append(version)
    RecipeVersion.objects.bulk_create(to_create, batch_size=500)
    if to_create:
        ids = _version_ids(recipes, by_target)
    changed = _point(recipes, by_target, ids)
    if full:  # a full read: whatever the head does not have any more is archived
        keep = [r.pk for key, r in recipes.items() if by_target[key].exists]
        gone = Recipe.objects.filter(archived=False).exclude(pk__in=keep)
        changed += gone.update(archived=True)
    return changed, len(to_create)


def _version_ids(recipes: dict, by_target: dict) -> dict[tuple[int, str], tuple[int, bool]]:
    """(recipe id, commit) -> (version id, valid) for the versions the walk is about."""
    shas = sorted({v.commit_sha for key in recipes for v in by_target[key].versions})
    wanted = {r.pk for r in recipes.values()}
    found = {}
    for chunk in chunks(shas, SYNC_CHUNK):
        rows = RecipeVersion.objects.filter(commit_sha__in=chunk).values_list("recipe_id", "commit_sha", "id", "valid")
        for recipe_id, sha, pk, valid in rows:
            if recipe_id in wanted:
                found[(recipe_id, sha)] = (pk, valid)
    return found


def _point(recipes: dict, by_target: dict, ids: dict) -> int:
    """Move each recipe's latest/good pointers and archived flag; count the ones that changed."""
    dirty = []
    for key, recipe in recipes.items():
        entry = by_target[key]
        before = (recipe.latest_id, recipe.good_id, recipe.archived, recipe.path)
        for version in entry.versions:  # oldest first: the last one standing wins
            pk, valid = ids[(recipe.pk, version.commit_sha)]
            recipe.latest_id, recipe.path = pk, entry.path
            if valid:
                recipe.good_id = pk
        recipe.archived = not entry.exists
        if (recipe.latest_id, recipe.good_id, recipe.archived, recipe.path) != before:
            dirty.append(recipe)
    Recipe.objects.bulk_update(dirty, ["latest", "good", "archived", "path"], batch_size=500)
    return len(dirty)


def _result(started: float, head: str, *, changed: int, versions: int, files_read: int) -> SyncResult:
    active = Recipe.objects.filter(archived=False)
    return SyncResult(
        recipes=active.count(),
        changed=changed,
        invalid=active.filter(latest__valid=False).count(),
        seconds=time.monotonic() - started,
        head=head,
        versions=versions,
        files_read=files_read,
    )
