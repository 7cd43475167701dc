"""/api/approvals: what waits for a person (read), and the answer (operate): `auto <kind>
approve|reject` over HTTP."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema

from api.views.common import acting, refused
from runs import services
from runs.models import Approval
from runs.selectors import approvals_pending

router = Router(tags=["approvals"])
LIMIT = 200


class AnswerIn(Schema):
    reason: str = ""


class ApprovalOut(Schema):
    id: int
    run: int
    target: str
    pass_: int | None = Field(alias="pass")
    step: int | None
    tool: str
    call: str
    input: Any
    pattern: str
    state: str
    reason: str
    created_at: datetime
    expires_at: datetime | None


class ApprovalListOut(Schema):
    approvals: list[ApprovalOut]


class AnswerOut(Schema):
    message: str
    approval: ApprovalOut


def approval_row(approval: Approval) -> dict:
    return {
        "id": approval.pk,
        "run": approval.run_id,
        "target": approval.run.target,
        "pass": approval.pass_number,
        "step": approval.step_number,
        "tool": approval.tool_name,
        "call": approval.action_text,
        "input": approval.tool_input,
        "pattern": approval.pattern,
        "state": approval.state,
        "reason": approval.reason,
        "created_at": approval.created_at,
        "expires_at": approval.expires_at,
    }


@router.get("/approvals", response=ApprovalListOut, by_alias=True)
def approval_list(request: HttpRequest):
    """Every pending approval across runs, the soonest to expire first. Scope: read."""
    with acting(request, "read"):
        return {"approvals": [approval_row(a) for a in approvals_pending(limit=LIMIT)]}


def _answer(request: HttpRequest, approval_id: int, payload: AnswerIn, approved: bool) -> dict:
    with acting(request, "operate") as owner:
        approval = get_object_or_404(Approval.objects.select_related("run"), pk=approval_id)
        try:
            said = services.approval_answer(
                approval=approval, user=owner, approved=approved, reason=payload.reason[:2000]
            )
        except services.RunRefused as exc:
            raise refused(exc) from None
        approval.refresh_from_db()
        return {"message": said, "approval": approval_row(approval)}


@router.post("/approvals/{approval_id}/approve", response=AnswerOut, by_alias=True)
def approval_approve(request: HttpRequest, approval_id: int, payload: AnswerIn | None = None):
    """Let the waiting call go ahead; `reason` is optional. Scope: operate."""
    return _answer(request, approval_id, payload or AnswerIn(), approved=True)


@router.post("/approvals/{approval_id}/reject", response=AnswerOut, by_alias=True)
def approval_reject(request: HttpRequest, approval_id: int, payload: AnswerIn | None = None):
    """Refuse the waiting call; the agent is told, with `reason`. Scope: operate."""
    return _answer(request, approval_id, payload or AnswerIn(), approved=False)
