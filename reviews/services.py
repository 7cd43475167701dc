"""Change requests: every edit from the dashboard is a commit on a review branch, reviewed as a
diff with its plan and cost delta, and merged into the tracked branch by someone else.

Saving never writes to the tracked branch. Approving merges (fast-forward when it can, else a
merge commit built without a checkout), moves the branch with a compare-and-swap (a non-forced
push for a remote), then syncs. A merge that conflicts leaves the tracked branch and the review
branch as they were and says which files clash.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.services import audit_record
from budgets.lineup import tokenizer_note
from catalogue.recipe import NAME_RE
from catalogue.repo import GitRepo, Identity, PushRejected, RepoError, open_repo, recipe_path, redact, reopen_location
from catalogue.spec import FOLDERS
from catalogue.sync import parse_version, recipes_sync
from reviews.models import OPEN_STATES, ChangeAction, ChangeRequest, ChangeState, ReviewComment, Verdict
from reviews.signals import change_approved, change_conflict, change_opened, change_updated
from rysh_site.roles import require, user_can

log = logging.getLogger(__name__)
MERGE_ATTEMPTS = 3
MERGE_CLAIM_EXPIRES = timedelta(minutes=10)


class ReviewError(Exception):
    """A change that cannot be made as asked; the message is for the person who asked."""


# --- identities ---------------------------------------------------------------------------------


def identity_for(user) -> Identity:
    """The git identity of a dashboard user: their name and email, never the machine's config."""
    if user is None:
        return Identity("rysh", "rysh@rysh.invalid")
    username = user.get_username()
    name = (user.get_full_name() or username).strip()
    email = (user.email or f"{username}@rysh.invalid").strip()
    clean = lambda s: re.sub(r"[<>\n\r\x00]", "", s) or "rysh"  # noqa: E731 - git refuses these
    return Identity(clean(name), clean(email))


# --- opening a change request --------------------------------------------------------------------


def change_request_open(
    *, user, kind: str, name: str, text: str, message: str = "", create: bool = False
) -> ChangeRequest:
    """An edit of a recipe (or a new one, `create=True`) committed to a review branch."""
    require(user, "edit")
    _check_target(kind, name)
    git, branch, base = _tracked()
    path = recipe_path(FOLDERS[kind], name)
    base_text = git.read_file(base, path)
    if create and base_text is not None:
        raise ReviewError(f"{kind}/{name} already exists; edit it instead")
    if not create and base_text is None:
        raise ReviewError(f"{kind}/{name} is not on {branch} any more")
    text = normalize_text(text)
    if not create and text == base_text:
        raise ReviewError("nothing changed: the text is the same as on the tracked branch")
    verb = "Create" if create else "Edit"
    return _open_file(
        git,
        user=user,
        kind=kind,
        name=name,
        path=path,
        base=base,
        before=base_text,
        files={path: text},
        message=message or f"{verb} {kind}/{name}",
    )


def change_request_rename(*, user, kind: str, name: str, new_name: str, message: str = "") -> ChangeRequest:
    require(user, "edit")
    _check_target(kind, new_name)
    if new_name == name:
        raise ReviewError("the new name is the same as the old one")
    git, branch, base = _tracked()
    path, new_path = recipe_path(FOLDERS[kind], name), recipe_path(FOLDERS[kind], new_name)
    text = git.read_file(base, path)
    if text is None:
        raise ReviewError(f"{kind}/{name} is not on {branch} any more")
    if git.read_file(base, new_path) is not None:
        raise ReviewError(f"{kind}/{new_name} already exists")
    return _open(
        git,
        user=user,
        action=ChangeAction.RENAME,
        kind=kind,
        name=name,
        new_name=new_name,
        path=path,
        new_path=new_path,
        base=base,
        base_text=text,
        proposed_text=text,
        files={path: None, new_path: text},
        message=message or f"Rename {kind}/{name} to {kind}/{new_name}",
    )


def change_request_delete(*, user, kind: str, name: str, message: str = "") -> ChangeRequest:
    require(user, "edit")
    git, branch, base = _tracked()
    path = recipe_path(FOLDERS[kind], name)
    text = git.read_file(base, path)
    if text is None:
        raise ReviewError(f"{kind}/{name} is not on {branch} any more")
    return _open(
        git,
        user=user,
        action=ChangeAction.DELETE,
        kind=kind,
        name=name,
        path=path,
        new_path="",
        base=base,
        base_text=text,
        proposed_text="",
        files={path: None},
        message=message or f"Delete {kind}/{name}",
    )


def change_request_open_files(
    *, user, kind: str, name: str, path: str, files: dict[str, str], message: str
) -> ChangeRequest:
    """A change of files that belong to a recipe (its eval cases: docs/evals.md) committed to a
    review branch. `path` is the file the page shows and a revision rewrites; `files` holds it
    and any others written with it (a new case's task.md and expect.yaml). kind/name are the
    recipe's, which must be on the tracked branch."""
    require(user, "edit")
    _check_target(kind, name)
    if path not in files:
        raise ReviewError(f"{path} is not among the files of this change")
    git, branch, base = _tracked()
    if git.read_file(base, recipe_path(FOLDERS[kind], name)) is None:
        raise ReviewError(f"{kind}/{name} is not on {branch} any more")
    files = {p: normalize_text(text) for p, text in files.items()}
    before = {p: git.read_file(base, p) for p in files}
    if all(before[p] == files[p] for p in files):
        raise ReviewError("nothing changed: the files are the same as on the tracked branch")
    return _open_file(
        git, user=user, kind=kind, name=name, path=path, base=base, before=before[path], files=files, message=message
    )


def normalize_text(text: str) -> str:
    """Browsers send CRLF from a textarea; the repository keeps LF and a final newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") or not text else text + "\n"


def _check_target(kind: str, name: str) -> None:
    if kind not in FOLDERS:
        raise ReviewError(f"kind must be {' or '.join(FOLDERS)}, got {kind!r}")
    if not NAME_RE.match(name or ""):
        raise ReviewError(
            f"{name!r} is not a recipe name: use lowercase letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        )


def _tracked() -> tuple[GitRepo, str, str]:
    git = open_repo(settings.RYSH_RECIPES_REPO)
    branch = settings.RYSH_RECIPES_BRANCH
    git.refresh(branch)
    return git, branch, git.head(branch)


def change_request_repo(change: ChangeRequest) -> GitRepo:
    """The repository a change request lives in: stored redacted, so the configured location
    (and its token) when it is that one."""
    return open_repo(reopen_location(change.repo, settings.RYSH_RECIPES_REPO))


def _open_file(
    git: GitRepo, *, user, kind: str, name: str, path: str, base: str, before: str | None, files: dict, message: str
) -> ChangeRequest:
    """A change the page shows as one file, `path`: created when it is not on the tracked branch
    (`before` None), else edited; `files` holds its new text and any files written with it."""
    create = before is None
    return _open(
        git,
        user=user,
        action=ChangeAction.CREATE if create else ChangeAction.EDIT,
        kind=kind,
        name=name,
        path="" if create else path,
        new_path=path,
        base=base,
        base_text=before or "",
        proposed_text=files[path],
        files=files,
        message=message,
    )


def _open(git: GitRepo, *, user, message: str, files: dict, base: str, **fields) -> ChangeRequest:
    message = normalize_text(message).strip()
    change = ChangeRequest.objects.create(
        author=user,
        title=message.splitlines()[0][:300],
        repo=redact(settings.RYSH_RECIPES_REPO),  # never a token in the database (change_request_repo)
        target_branch=settings.RYSH_RECIPES_BRANCH,
        base_sha=base,
        **fields,
    )
    change.branch = f"rysh/cr-{change.pk}-{_slug(change.new_name or change.name)}"
    try:
        tree = git.write_tree(base, files)
        change.head_sha = git.commit_tree(tree, [base], message, author=identity_for(user))
        git.publish(change.branch, change.head_sha, None)
    except RepoError:
        change.delete()  # nothing was published: leave no request behind
        raise
    change.save(update_fields=["branch", "head_sha"])
    audit_record(
        actor=user, action="recipe.save", target=_audit_target(change), detail={"change_action": change.action}
    )
    change_opened.send(sender=ChangeRequest, change=change)  # notifications listen
    _sync_quietly()
    return change


def _audit_target(change: ChangeRequest) -> tuple[str, int, str]:
    return ("change", change.pk, f"change request #{change.pk} {change.target}")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "recipe"


# --- revising, discussing, deciding --------------------------------------------------------------


def change_request_update(*, change: ChangeRequest, user, text: str, message: str = "") -> ChangeRequest:
    """A new revision from the author. In conflict, it is committed on top of both the review
    branch and the tracked branch's head, with the author's text: that resolves the conflict."""
    require(user, "edit")
    if change.author_id != user.pk and not user_can(user, "admin"):
        raise PermissionDenied("only the author (or an admin) can revise a change request")
    if change.state not in OPEN_STATES:
        raise ReviewError(f"this change request is {change.state}; it cannot be revised")
    if change.action == ChangeAction.DELETE:
        raise ReviewError("a deletion has no text to revise")
    git = change_request_repo(change)
    git.refresh(change.target_branch)
    text = normalize_text(text)
    files = {change.new_path: text}
    if change.action == ChangeAction.RENAME:
        files[change.path] = None
    tip = change.head_sha
    if change.state == ChangeState.CONFLICT:
        main = git.head(change.target_branch)
        parents, tree_base = [tip, main], main
    else:
        parents, tree_base = [tip], tip
    message = normalize_text(message).strip() or f"Revise {change.target}"
    new = git.commit_tree(git.write_tree(tree_base, files), parents, message, author=identity_for(user))
    git.publish(change.branch, new, tip)
    if len(parents) == 2:  # the change now sits on the current head: diff against that
        change.base_sha = parents[1]
        change.base_text = git.read_file(parents[1], change.path or change.new_path) or ""
    # Only a request still open at the tip this revision builds on takes it: one merged (or
    # revised by someone else) meanwhile must not be reopened or have its head swapped.
    fields = {"head_sha": new, "proposed_text": text, "state": ChangeState.OPEN, "conflicts": []}
    if len(parents) == 2:
        fields.update(base_sha=change.base_sha, base_text=change.base_text)
    with transaction.atomic():
        if not ChangeRequest.objects.filter(pk=change.pk, state__in=OPEN_STATES, head_sha=tip).update(
            **fields, updated_at=timezone.now()
        ):
            raise ReviewError("this change request was merged, closed or revised meanwhile; reload it")
        # The UPDATE row is what makes earlier approvals stale (see change_request_approvals).
        ReviewComment.objects.create(change_request=change, author=user, verdict=Verdict.UPDATE, body=message)
    change.refresh_from_db()
    audit_record(actor=user, action="recipe.save", target=_audit_target(change), detail={"change_action": "revise"})
    change_updated.send(sender=ChangeRequest, change=change)  # evals listen (their auto suites)
    _sync_quietly()
    return change


def change_request_comment(*, change: ChangeRequest, user, body: str) -> ReviewComment:
    require(user, "review")  # viewers read the thread; only reviewers and editors write in it
    body = body.strip()
    if not body:
        raise ReviewError("write something first")
    comment = ReviewComment.objects.create(change_request=change, author=user, body=body)
    audit_record(actor=user, action="change.comment", target=_audit_target(change), detail={"comment": comment.pk})
    return comment


def change_request_request_changes(*, change: ChangeRequest, user, body: str = "") -> ChangeRequest:
    _require_reviewer(change, user, "request changes on")
    # Only an open request changes state; one merged meanwhile stays merged.
    ChangeRequest.objects.filter(pk=change.pk, state__in=[ChangeState.OPEN]).update(
        state=ChangeState.CHANGES_REQUESTED, updated_at=timezone.now()
    )
    ReviewComment.objects.create(change_request=change, author=user, verdict=Verdict.REQUEST_CHANGES, body=body.strip())
    audit_record(actor=user, action="change.request_changes", target=_audit_target(change))
    change.refresh_from_db()
    return change


def change_request_close(*, change: ChangeRequest, user) -> ChangeRequest:
    require(user, "edit")  # an author demoted to viewer no longer decides about their request
    if change.author_id != user.pk and not user_can(user, "admin"):
        raise PermissionDenied("only the author (or an admin) can close a change request")
    if not ChangeRequest.objects.filter(pk=change.pk, state__in=OPEN_STATES).update(
        state=ChangeState.CLOSED, updated_at=timezone.now()
    ):
        raise ReviewError("this change request is not open")
    ReviewComment.objects.create(
        change_request=change,
        author=user,
        verdict=Verdict.EVENT,
        body=f"Closed without merging; the branch {change.branch} is kept.",
    )
    audit_record(actor=user, action="change.close", target=_audit_target(change))
    change.refresh_from_db()
    return change


def change_request_approve(*, change: ChangeRequest, user, seen_head: str) -> ChangeRequest:
    """Merge into the tracked branch, then sync. `seen_head` is the revision the reviewer read:
    nobody who wrote a revision (the author, or an admin who revised it) can approve it."""
    _require_reviewer(change, user, "approve")
    if change.comments.filter(verdict=Verdict.UPDATE, author_id=user.pk).exists():
        raise PermissionDenied("you revised this change request, so someone else must approve it")
    blockers = change_merge_blockers(change)
    if blockers:
        raise ReviewError("Not merged: " + "; ".join(blockers))
    previous = change.state
    # The claim: two reviewers pressing Approve at once must not merge twice; the one whose
    # update moves the request to `merging` goes on, the other is told it is not open.
    # It also pins the head: a revision pushed after the reviewer loaded the page moves
    # head_sha, and the claim then fails instead of merging text the reviewer never saw.
    # A claim left behind by a process that died mid-merge expires; merging again is safe
    # (a tip already in the branch is recognised as merged).
    now = timezone.now()
    claimable = Q(state__in=OPEN_STATES) | Q(state=ChangeState.MERGING, updated_at__lt=now - MERGE_CLAIM_EXPIRES)
    claim = ChangeRequest.objects.filter(claimable, pk=change.pk, head_sha=seen_head or "-")
    if not claim.update(state=ChangeState.MERGING, updated_at=now):
        change.refresh_from_db()
        if change.head_sha != seen_head:
            raise ReviewError(
                f"Not merged: the change was revised after you loaded it (now at {change.head_sha[:10]}). "
                "Read the new diff, then approve again."
            )
        raise ReviewError("this change request is not open (merged or closed meanwhile)")
    change.head_sha = seen_head  # merge what was claimed, even if the caller's object is older
    if previous == ChangeState.MERGING:
        previous = ChangeState.OPEN
    try:
        merged_sha, conflicts = _merge(change, user)
    except Exception:
        ChangeRequest.objects.filter(pk=change.pk).update(state=previous)
        raise
    change.refresh_from_db()
    ReviewComment.objects.create(change_request=change, author=user, verdict=Verdict.APPROVE)
    audit_record(
        actor=user,
        action="change.approve",
        target=_audit_target(change),
        detail={"head": seen_head, "outcome": "conflict" if conflicts else "merged"},
    )
    if conflicts:
        change.state, change.conflicts = ChangeState.CONFLICT, list(conflicts)
        change.save(update_fields=["state", "conflicts", "updated_at"])
        ReviewComment.objects.create(
            change_request=change,
            verdict=Verdict.EVENT,
            body=(
                f"Not merged: {change.target_branch} has moved and the merge conflicts in "
                f"{', '.join(conflicts)}. Nothing was lost: {change.target_branch} and the "
                f"branch {change.branch} are as they were. The author can revise the change "
                f"on top of the current {change.target_branch} to resolve it."
            ),
        )
        change_conflict.send(sender=ChangeRequest, change=change)  # notifications listen
        return change
    with transaction.atomic():
        change.state, change.conflicts = ChangeState.MERGED, []
        change.merged_sha, change.merged_by, change.merged_at = merged_sha, user, timezone.now()
        change.save()
        ReviewComment.objects.create(
            change_request=change,
            verdict=Verdict.EVENT,
            body=f"Merged into {change.target_branch} as {merged_sha[:10]}.",
        )
        change_approved.send(sender=ChangeRequest, change=change)  # notifications listen
    _sync_quietly()
    return change


# The merge gate's port: apps above reviews add checks here (evals adds its suites' verdict in
# EvalsConfig.ready, docs/evals.md), so that reviews never imports them. Each says why `change`
# may not merge yet, [] when it may.
MERGE_CHECKS: list[Callable[[ChangeRequest], list[str]]] = []


def change_merge_blockers(change: ChangeRequest) -> list[str]:
    """Why the change may not merge yet, from every check added to MERGE_CHECKS ([] when it may)."""
    return [reason for check in MERGE_CHECKS for reason in check(change)]


def _require_reviewer(change: ChangeRequest, user, what: str) -> None:
    require(user, "review")
    if change.author_id is not None and change.author_id == user.pk:
        raise PermissionDenied(f"you cannot {what} your own change request")


def _merge(change: ChangeRequest, user) -> tuple[str | None, tuple[str, ...]]:
    git = change_request_repo(change)
    for _attempt in range(MERGE_ATTEMPTS):
        git.refresh(change.target_branch)
        target = git.head(change.target_branch)
        merge = git.merge(
            target=target,
            tip=change.head_sha,
            message=(f"Merge change request #{change.pk}: {change.title}\n\nApproved by {identity_for(user).name}."),
            author=identity_for(change.author),
            committer=identity_for(user),
        )
        if merge.sha is None:
            return None, merge.conflicts
        if merge.sha == target:
            return target, ()  # already in the branch: nothing to move
        try:
            git.publish(change.target_branch, merge.sha, target)
        except PushRejected:
            log.info("%s moved while merging change request #%s; trying again", change.target_branch, change.pk)
            continue
        return merge.sha, ()
    raise ReviewError(f"{change.target_branch} kept moving; try again in a moment")


def _sync_quietly() -> None:
    """After every commit the app makes: the merge is done, a failed sync only delays the list."""
    try:
        recipes_sync()
    except RepoError:
        log.exception("sync after a commit failed; the schedule will try again")


# --- diffs: text and plan -------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLine:
    kind: str  # hunk | ctx | add | del
    text: str
    old: int | None = None
    new: int | None = None


# Past this many differing lines (after the common head and tail are set aside) the page says
# the diff is too large instead of computing it: SequenceMatcher's cost grows with the square
# of what it compares, and any viewer can open a diff.
DIFF_MAX_LINES = 2000
DIFF_CACHE_SIZE = 64
_diff_cache: OrderedDict[tuple[str, str, int], tuple[DiffLine, ...]] = OrderedDict()
_diff_lock = threading.Lock()


def text_diff(before: str, after: str, *, context: int = 3) -> list[DiffLine]:
    """A unified diff as rows the template classes and escapes (line numbers on both sides);
    one `skip` row when it is too large to show. Cached by the texts' hashes."""
    key = (_digest(before), _digest(after), context)
    with _diff_lock:
        if key in _diff_cache:
            _diff_cache.move_to_end(key)
            return list(_diff_cache[key])
    rows = tuple(_text_diff(before, after, context))
    with _diff_lock:
        _diff_cache[key] = rows
        while len(_diff_cache) > DIFF_CACHE_SIZE:
            _diff_cache.popitem(last=False)
    return list(rows)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _text_diff(before: str, after: str, context: int) -> list[DiffLine]:
    a, b = before.splitlines(), after.splitlines()
    # Most edits touch a few lines of a long file: match the common head and tail in linear
    # time, and hand only the middle to SequenceMatcher.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if not middle_a and not middle_b:
        return []
    if len(middle_a) + len(middle_b) > DIFF_MAX_LINES:
        return [
            DiffLine(
                "skip",
                f"The diff is too large to show ({len(middle_a)} lines replaced by {len(middle_b)}; "
                f"at most {DIFF_MAX_LINES} are shown). Compare the two files in git.",
            )
        ]
    lo, hi_a, hi_b = max(0, head - context), len(a) - max(0, tail - context), len(b) - max(0, tail - context)
    matcher = difflib.SequenceMatcher(None, a[lo:hi_a], b[lo:hi_b])
    rows = []
    for group in matcher.get_grouped_opcodes(context):
        group = [(tag, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for tag, i1, i2, j1, j2 in group]
        i1, j1 = group[0][1], group[0][3]
        i2, j2 = group[-1][2], group[-1][4]
        rows.append(DiffLine("hunk", f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@"))
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                rows += [DiffLine("ctx", a[i], i + 1, b1 + i - a1 + 1) for i in range(a1, a2)]
                continue
            rows += [DiffLine("del", a[i], old=i + 1) for i in range(a1, a2)]
            rows += [DiffLine("add", b[j], new=j + 1) for j in range(b1, b2)]
    return rows


@dataclass(frozen=True)
class PlanSide:
    exists: bool
    valid: bool
    errors: tuple[str, ...]
    summary: tuple[str, ...]
    worst_tokens: int | None
    worst_display: str
    money: Decimal | None
    executor: str = ""  # the models it runs on (the recipe's own, else the defaults)
    judge: str = ""


@dataclass(frozen=True)
class PlanDelta:
    before: PlanSide
    after: PlanSide

    @property
    def summary_rows(self) -> list[tuple[str, str, bool]]:
        """(before, after, changed) for the three lines rysh prints."""
        b, a = list(self.before.summary), list(self.after.summary)
        width = max(len(b), len(a))
        b += [""] * (width - len(b))
        a += [""] * (width - len(a))
        return [(x, y, x != y) for x, y in zip(b, a)]

    @property
    def tokens_delta(self) -> int | None:
        if self.before.worst_tokens is None or self.after.worst_tokens is None:
            return None
        return self.after.worst_tokens - self.before.worst_tokens

    @property
    def money_delta(self) -> Decimal | None:
        before = self.before.money if self.before.exists else Decimal(0)
        after = self.after.money if self.after.exists else Decimal(0)
        return None if before is None or after is None else after - before

    @property
    def worst_line(self) -> str:
        """`worst case 20b → 25b, +$15.00` — what this change does to tonight's bill."""
        line = f"worst case {self.before.worst_display} → {self.after.worst_display}"
        delta = self.money_delta
        if delta is not None and (self.before.worst_tokens is not None or self.after.worst_tokens is not None):
            sign = "+" if delta >= 0 else "−"
            line += f", {sign}${abs(delta):,.2f}"
        return line

    @property
    def notes(self) -> list[str]:
        """A model that changes generation across the tokenizer change: the same work now counts
        about 30% more tokens (or fewer, going back) than the worst cases above suggest."""
        if not (self.before.valid and self.after.valid):
            return []
        pairs = dict.fromkeys([(self.before.executor, self.after.executor), (self.before.judge, self.after.judge)])
        return [note for before, after in pairs if (note := tokenizer_note(before, after))]

    @property
    def direction(self) -> str:
        delta = self.money_delta if self.money_delta is not None else self.tokens_delta
        return "" if not delta else ("up" if delta > 0 else "down")


def plan_side(text: str | None, *, kind: str, name: str, path: str = "") -> PlanSide:
    if text is None or text == "":
        return PlanSide(False, False, (), (), None, "—", None)
    parsed = parse_version(text, path=path or f"{name}.md", kind=kind, name=name)
    if not parsed["valid"]:
        return PlanSide(True, False, tuple(parsed["errors"]), (), None, "invalid", None)
    plan = parsed["plan"]
    money = Decimal(plan["money"]) if plan["money"] is not None else None
    return PlanSide(
        True,
        True,
        (),
        tuple(plan["summary"]),
        plan["worst_tokens"],
        plan["worst_display"],
        money,
        executor=plan.get("executor", ""),
        judge=plan.get("judge", ""),
    )


def plan_delta(before: str | None, after: str | None, *, kind: str, name: str, new_name: str = "") -> PlanDelta:
    return PlanDelta(plan_side(before, kind=kind, name=name), plan_side(after, kind=kind, name=new_name or name))
