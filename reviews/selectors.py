"""The read side of reviews (HackSoft selectors): change requests, their threads, and the
editor's check of a recipe text. Nothing here writes; reviews/services.py does."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from budgets.plan import resolve
from catalogue.plan_report import models_for, plan_lines
from catalogue.recipe import NAME_RE, RecipeError, parse_recipe, unfilled_placeholders
from catalogue.repo import RepoError, recipe_path
from catalogue.spec import FOLDERS
from reviews.models import OPEN_STATES, ChangeRequest, ReviewComment, Verdict
from reviews.services import change_request_repo, plan_delta

LIST_LIMIT = 200


def change_requests_open_count() -> int:
    return ChangeRequest.objects.filter(state__in=OPEN_STATES).count()


def change_requests_open_for_recipe(*, kind: str, name: str) -> QuerySet[ChangeRequest]:
    """Open requests that touch a recipe, under its name or as the name it is renamed to."""
    return (
        ChangeRequest.objects.filter(kind=kind, state__in=OPEN_STATES)
        .filter(Q(name=name) | Q(new_name=name))
        .select_related("author")
    )


def change_requests_open_for_file(*, kind: str, name: str) -> QuerySet[ChangeRequest]:
    """Open requests that change a package's files (kind "package", its folder's name) or the
    policy file (kind "policy", name "policy")."""
    return ChangeRequest.objects.filter(kind=kind, name=name, state__in=OPEN_STATES).select_related("author")


def change_request_list(*, states: Iterable[str] | None) -> QuerySet[ChangeRequest]:
    """Newest first (the model's order), without the texts; `states` None means every state."""
    changes = ChangeRequest.objects.select_related("author").defer("base_text", "proposed_text")
    if states is not None:
        changes = changes.filter(state__in=states)
    return changes[:LIST_LIMIT]


def change_request_comments(change: ChangeRequest) -> QuerySet[ReviewComment]:
    return change.comments.select_related("author")


def change_request_revisers(change: ChangeRequest) -> set[int]:
    """The users who wrote a revision of the change (the author, or an admin who revised it)."""
    return set(change.comments.filter(verdict=Verdict.UPDATE).values_list("author_id", flat=True)) - {None}


def change_request_approvals(change: ChangeRequest) -> QuerySet[ReviewComment]:
    """Approvals of the current revision: a revision (an UPDATE row) makes earlier ones stale."""
    approvals = change.comments.filter(verdict=Verdict.APPROVE)
    last_update = change.comments.filter(verdict=Verdict.UPDATE).order_by("-created_at", "-id").first()
    if last_update is not None:
        approvals = approvals.filter(
            Q(created_at__gt=last_update.created_at) | Q(created_at=last_update.created_at, id__gt=last_update.id)
        )
    return approvals.select_related("author")


def change_request_theirs(change: ChangeRequest) -> str | None:
    """The file as the tracked branch has it now, to resolve a conflict by hand."""
    try:
        git = change_request_repo(change)
        git.refresh(change.target_branch)
        return git.read_file(git.head(change.target_branch), change.path or change.new_path) or ""
    except RepoError:
        return None


_AT_LINE = re.compile(r"^\S+?:(\d+)(?::\d+)? (.+)$", re.S)


def _located(warning: str) -> dict:
    """A warning as the editor shows it: `file:12 until: …` becomes a link to line 12."""
    found = _AT_LINE.match(warning)
    return {"line": int(found[1]), "text": found[2]} if found else {"line": None, "text": warning}


def recipe_text_check(text: str, *, kind: str, name: str, against: str | None = None) -> dict:
    """What the editor shows beside a text: its errors at their lines, or the plan preview,
    the warnings and (given the text it replaces) the cost delta."""
    kind = kind if kind in FOLDERS else "task"
    path = recipe_path(FOLDERS[kind], name if NAME_RE.match(name) else "new-recipe")
    line_count = text.count("\n") + 1
    try:
        spec = parse_recipe(text, path=path, kind=kind, name=name)
    except RecipeError as exc:
        return {"issues": exc.issues, "preview": [], "warnings": [], "delta": None, "line_count": line_count}
    plan = resolve(spec.do, spec.loop_while)
    executor, judge = models_for(spec)
    return {
        "issues": [],
        "line_count": line_count,
        "preview": plan_lines(spec, plan, executor=executor, judge=judge),
        "warnings": [_located(w) for w in (*spec.warnings, *plan.warnings, *unfilled_placeholders(spec, None))],
        "delta": plan_delta(against, text, kind=kind, name=name) if against is not None else None,
    }


@dataclass(frozen=True)
class JudgeChange:
    """What a change request does to the judge: its goal and model before and after."""

    until_before: str
    until_after: str
    judge_before: str
    judge_after: str
    effort_after: str = ""  # the proposed judge's `loop.while.effort` ("" none), sent on each re-judge call

    @property
    def until_changed(self) -> bool:
        return self.until_before != self.until_after

    @property
    def judge_changed(self) -> bool:
        return self.judge_before != self.judge_after


def _judge_of(text: str, *, kind: str, name: str) -> tuple[str, str, str] | None:
    try:
        spec = parse_recipe(text, path=f"{name}.md", kind=kind, name=name)
    except RecipeError:
        return None
    return (spec.loop_while.until or "").strip(), models_for(spec)[1], spec.loop_while.effort or ""


def change_request_judge_change(change: ChangeRequest) -> JudgeChange | None:
    """The judge's goal or model changed from the base text to the proposed one (both valid,
    the new one with a goal): then past verdicts can be re-judged. None otherwise."""
    if not change.base_text or not change.proposed_text:
        return None
    before = _judge_of(change.base_text, kind=change.kind, name=change.name)
    after = _judge_of(change.proposed_text, kind=change.kind, name=change.new_name or change.name)
    if before is None or after is None or before[:2] == after[:2] or not after[0]:
        return None
    return JudgeChange(before[0], after[0], before[1], after[1], effort_after=after[2])
