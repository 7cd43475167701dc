"""Fragments of current state, rendered from the same partials the pages use.

A push is never a diff or an event to replay: it is the whole current fragment with a stable
id, swapped out of band, so a browser that reconnects (or misses a push) only needs the
latest one. Pages and pushes call the same functions here.
"""

from __future__ import annotations

from django.template.loader import render_to_string

from audit.selectors import audit_for_run
from catalogue.markdown import render_markdown
from runs import selectors
from runs.models import ApprovalState, Run
from runs.report import render_report
from runs.timeline import timeline_svg
from rysh_site.roles import user_can
from spend.selectors import installation_quota_bar

STEP_LOG_LIMIT = 200
FILMSTRIP_LIMIT = 60
RECENT_LIMIT = 15
EVENT_LIMIT = 30
APPROVAL_LIMIT = 20
INBOX_LIMIT = 200
HOME_FRAGMENTS = "runs/dashboard/_live.html"
RUN_FRAGMENTS = "runs/run_detail/_live.html"
INBOX_FRAGMENTS = "runs/approvals/_live.html"
NAV_FRAGMENT = "runs/shared/_nav_approvals.html"


def home_context(user) -> dict:
    return {
        "rows": selectors.live_rows(selectors.runs_active()),
        "recent": selectors.runs_recent(limit=RECENT_LIMIT),
        "can_operate": user_can(user, "operate"),
        "quota_bar": installation_quota_bar,  # called by the page's template only, not by every push
    }


def home_fragments(user) -> str:
    return render_to_string(HOME_FRAGMENTS, {**home_context(user), "oob": True}) + nav_fragment()


def inbox_context(user) -> dict:
    """/approvals/: every pending approval across runs, with what the nav's count says."""
    pending = selectors.approvals_pending(limit=INBOX_LIMIT)
    return {"pending": pending, "approvals_waiting": len(pending), "can_operate": user_can(user, "operate")}


def inbox_fragments(user) -> str:
    return render_to_string(INBOX_FRAGMENTS, {**inbox_context(user), "oob": True})


def nav_fragment() -> str:
    """The nav's count of approvals waiting, out of band: every live page keeps it current."""
    return render_to_string(NAV_FRAGMENT, {"approvals_waiting": selectors.approvals_pending_count(), "oob": True})


def run_context(run: Run, user) -> dict:
    passes = selectors.run_passes(run)
    current = passes[-1] if passes else None
    pending, settled = selectors.spend_by_run([run])
    return {
        "run": run,
        "row": selectors.live_row(run, current, pending.get(run.pk, 0), settled.get(run.pk, 0)),
        "passes": passes,
        "steps": selectors.run_steps_recent(run, limit=STEP_LOG_LIMIT),
        "timeline": timeline_svg(run, passes),
        "files": selectors.run_result_files(run),
        "report": _report_html(run),
        "events": selectors.run_events_recent(run, limit=EVENT_LIMIT),
        "audit": audit_for_run(run.pk),  # who did what to this run (runs/run_detail/_audit.html)
        "can_read_audit": user_can(user, "audit"),
        "can_operate": user_can(user, "operate"),
        "controls": selectors.controls_for(run),
        "quota_wait": selectors.quota_wait(run),
        "current": current,
        **web_context(run),
    }


def web_context(run: Run) -> dict:
    """Approvals (pending first), the filmstrip of step screenshots and any videos."""
    approvals = selectors.run_approvals(run, limit=APPROVAL_LIMIT)
    context = {"approvals": approvals, "pending": [a for a in approvals if a.state == ApprovalState.PENDING]}
    if run.kind != "web":
        return context
    return {
        **context,
        "filmstrip": selectors.run_filmstrip(run, limit=FILMSTRIP_LIMIT),
        "videos": selectors.run_videos(run),
    }


def run_fragments(run: Run, user) -> str:
    return render_to_string(RUN_FRAGMENTS, {**run_context(run, user), "oob": True}) + nav_fragment()


def _report_html(run: Run):
    """This run's report, rendered from the database: run-report.md on disk is the latest run's."""
    if run.started_at is None:
        return ""
    return render_markdown(render_report(run))
