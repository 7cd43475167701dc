"""Change requests: the list, one request (diff, plan and cost delta, thread) and its actions."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from catalogue.repo import RepoError
from evals.views import case_file_diffs, change_evals_context, change_merge_context
from reviews.models import OPEN_STATES, ChangeAction, ChangeRequest, ChangeState
from reviews.selectors import (
    change_request_approvals,
    change_request_comments,
    change_request_judge_change,
    change_request_list,
    change_request_revisers,
)
from reviews.services import (
    ReviewError,
    change_request_approve,
    change_request_close,
    change_request_comment,
    change_request_request_changes,
    plan_delta,
    text_diff,
)
from reviews.views.files import change_repo_file_context
from runs.models import Rejudge
from runs.outlook import schedule_outlook
from runs.workbench.rejudge import (
    SCRIPTED_NOTE,
    RejudgeRefused,
    provider_label,
    rejudge_active,
    rejudge_delta,
    rejudge_estimate,
    rejudge_start,
    rejudges_for_change,
    rejudges_today,
)
from rysh_site.roles import require, user_can

FILTERS = {"open": OPEN_STATES, "merged": (ChangeState.MERGED,), "closed": (ChangeState.CLOSED,), "all": None}


def _get_change_for_user(request: HttpRequest, pk: int) -> ChangeRequest:
    require(request.user, "view")
    return get_object_or_404(ChangeRequest.objects.select_related("author", "merged_by"), pk=pk)


@login_required
def change_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    show = request.GET.get("state", "open")
    states = FILTERS.get(show, OPEN_STATES)
    return render(
        request,
        "reviews/change_list.html",
        {"changes": change_request_list(states=states), "show": show, "filters": FILTERS},
    )


@login_required
def change_detail(request: HttpRequest, pk: int) -> HttpResponse:
    change = _get_change_for_user(request, pk)
    user = request.user
    is_author = change.author_id == user.pk
    can_review = user_can(user, "review") and not is_author
    revised = user.pk in change_request_revisers(change)
    files = change_repo_file_context(change)  # a package's or the policy's file: its own facts
    # the Evals panel (docs/evals.md), {} without cases; a package or policy change has none here
    evals = {} if files else change_evals_context(request, change)
    # a case file, a package's or the policy's changed: no recipe, so no plan or cost delta
    case_edit = evals.get("case_edit", False) or bool(files)
    return render(
        request,
        "reviews/change_detail.html",
        {
            "change": change,
            "comments": change_request_comments(change),
            "current_approvals": {c.pk for c in change_request_approvals(change)},
            "diff": text_diff(change.base_text, change.proposed_text),
            "case_diffs": case_file_diffs(change) if case_edit else [],
            "delta": None
            if case_edit
            else plan_delta(
                change.base_text or None,
                change.proposed_text or None,
                kind=change.kind,
                name=change.name,
                new_name=change.new_name,
            ),
            # a scheduled recipe's runs per window × worst case, against each quota that counts them
            "schedule_lines": []
            if case_edit
            else schedule_outlook(
                text=change.proposed_text or None, kind=change.kind, name=change.new_name or change.name
            ),
            **evals,
            **files,
            **change_merge_context(change),
            "is_author": is_author,
            "can_review": can_review and change.is_open,
            "can_approve": can_review and change.is_open and not revised,
            "revised": revised,
            "can_comment": user_can(user, "review"),
            "can_revise": (is_author or user_can(user, "admin"))
            and user_can(user, "edit")
            and change.is_open
            and change.action != ChangeAction.DELETE,
            "can_close": (is_author or user_can(user, "admin")) and user_can(user, "edit") and change.is_open,
            **({} if case_edit else _rejudge_context(request, change)),
        },
    )


# -- re-judge: the proposed judge over past results ------------------------------------------------

REJUDGE_DEFAULT_N = 10


def _n_from(value: str | None) -> int:
    try:
        n = int(value or REJUDGE_DEFAULT_N)
    except ValueError:
        n = REJUDGE_DEFAULT_N
    return max(1, min(n, settings.RYSH_REJUDGE_MAX_PASSES))


def _rejudge_context(request: HttpRequest, change: ChangeRequest) -> dict:
    """The Re-judge section: offered when the change edits the judge's goal or model, with the
    estimate for the N asked for, and the latest re-judge's delta (older ones listed)."""
    judge_change = change_request_judge_change(change)
    rejudges = rejudges_for_change(change)
    if judge_change is None and not rejudges:
        return {}
    n = _n_from(request.GET.get("n"))
    can_rejudge = judge_change is not None and change.is_open and user_can(request.user, "review")
    context = {
        "judge_change": judge_change,
        "rejudge_n": n,
        "rejudge_max_n": settings.RYSH_REJUDGE_MAX_PASSES,
        "can_rejudge": can_rejudge,
        # one at a time per change, and so many a day per person: said beside the button
        "rejudge_running": rejudge_active(change) if can_rejudge else None,
        "rejudges_today": rejudges_today(request.user) if can_rejudge else 0,
        "rejudge_daily_max": settings.RYSH_REJUDGE_DAILY_MAX,
        "older_rejudges": rejudges[1:],
        **_rejudge_parts(change, rejudges[0] if rejudges else None),
    }
    if judge_change is not None:
        try:
            context["estimate"] = rejudge_estimate(
                kind=change.kind,
                name=change.name,
                until=judge_change.until_after,
                judge_model=judge_change.judge_after,
                judge_effort=judge_change.effort_after,
                n=n,
            )
        except RejudgeRefused as exc:
            context["rejudge_refused"] = str(exc)
        context["scripted_note"] = SCRIPTED_NOTE
    return context


def _rejudge_parts(change: ChangeRequest, rejudge: Rejudge | None) -> dict:
    return {
        "change": change,
        "rejudge": rejudge,
        "rejudge_provider": provider_label(rejudge.provider) if rejudge else "",
        # not "delta": the page's plan and cost delta has that name
        "rejudge_rows": rejudge_delta(rejudge) if rejudge and rejudge.state != "queued" else None,
    }


@login_required
@require_POST
def change_rejudge(request: HttpRequest, pk: int) -> HttpResponse:
    change = _get_change_for_user(request, pk)
    require(request.user, "review")
    judge_change = change_request_judge_change(change)
    if judge_change is None or not change.is_open:
        messages.error(request, "Nothing to re-judge: this change does not change the judge's goal or model.")
        return redirect("change_detail", pk=change.pk)
    try:
        rejudge_start(
            kind=change.kind,
            name=change.name,
            until=judge_change.until_after,
            judge_model=judge_change.judge_after,
            judge_effort=judge_change.effort_after,
            n=_n_from(request.POST.get("n")),
            user=request.user,
            change_request=change,
            # the estimate shown above the button: a press on an older one is refused
            seen_estimate=request.POST.get("estimate", ""),
        )
    except RejudgeRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Re-judge queued: a worker judges the past results with the proposed judge.")
    return redirect(reverse("change_detail", args=[change.pk]) + "#rejudge")


@login_required
def change_rejudge_status(request: HttpRequest, pk: int, rejudge_id: int) -> HttpResponse:
    """The re-judge's part of the page, for htmx to poll while it runs."""
    change = _get_change_for_user(request, pk)
    rejudge = get_object_or_404(Rejudge, pk=rejudge_id, change_request=change)
    return render(request, "reviews/_rejudge_result.html", _rejudge_parts(change, rejudge))


@login_required
@require_POST
def change_comment(request: HttpRequest, pk: int) -> HttpResponse:
    change = _get_change_for_user(request, pk)
    return _act(
        request,
        change,
        lambda: change_request_comment(change=change, user=request.user, body=request.POST.get("body", "")),
        "Comment added.",
    )


@login_required
@require_POST
def change_approve(request: HttpRequest, pk: int) -> HttpResponse:
    change = _get_change_for_user(request, pk)

    def approve() -> ChangeRequest:
        # The head the reviewer's page showed, from the form: a newer revision is not approved.
        done = change_request_approve(change=change, user=request.user, seen_head=request.POST.get("head", ""))
        if done.state == ChangeState.CONFLICT:
            messages.error(request, "Not merged: the merge conflicts. See below.")
        return done

    return _act(request, change, approve, None)


@login_required
@require_POST
def change_request_changes(request: HttpRequest, pk: int) -> HttpResponse:
    change = _get_change_for_user(request, pk)
    return _act(
        request,
        change,
        lambda: change_request_request_changes(change=change, user=request.user, body=request.POST.get("body", "")),
        "Changes requested.",
    )


@login_required
@require_POST
def change_close(request: HttpRequest, pk: int) -> HttpResponse:
    change = _get_change_for_user(request, pk)
    return _act(request, change, lambda: change_request_close(change=change, user=request.user), "Closed.")


def _act(
    request: HttpRequest, change: ChangeRequest, action: Callable[[], object], success: str | None
) -> HttpResponse:
    try:
        done = action()
    except (ReviewError, RepoError) as exc:
        messages.error(request, str(exc))
    else:
        if success:
            messages.success(request, success)
        elif getattr(done, "state", None) == ChangeState.MERGED:
            messages.success(request, f"Merged into {change.target_branch} and synced.")
    return redirect("change_detail", pk=change.pk)
