"""Fragments of current state, rendered from the same partials the pages use.

A push is never a diff or an event to replay: it is the whole current fragment with a stable
id, swapped out of band, so a browser that reconnects (or misses a push) only needs the
latest one. Pages and pushes call the same functions here.
"""
from __future__ import annotations

from pathlib import Path

from django.template.loader import render_to_string

from runs.judge import REPORT_NAME
from catalogue.markdown import render_markdown
from runs.report import render_report
from django.conf import settings

from runs.models import Approval, Pass, Run, RunEvent, Step
from runs.models import ACTIVE_STATES, ApprovalState, RunState
from rysh_site.roles import user_can
from runs.status import controls_for, live_row, live_rows, spend_by_run
from runs.timeline import timeline_svg

STEP_LOG_LIMIT = 200
FILMSTRIP_LIMIT = 60
RECENT_LIMIT = 15


def home_context(user) -> dict:
    active = Run.objects.filter(state__in=ACTIVE_STATES).order_by("created_at")
    recent = Run.objects.filter(state=RunState.FINISHED).order_by("-ended_at", "-id")[:RECENT_LIMIT]
    return {"rows": live_rows(active), "recent": list(recent), "can_operate": user_can(user, "operate")}


def home_fragments(user) -> str:
    return render_to_string("runs/_home_live.html", {**home_context(user), "oob": True})


def run_context(run: Run, user) -> dict:
    passes = list(Pass.objects.filter(run=run).order_by("number"))
    current = passes[-1] if passes else None
    steps = list(Step.objects.filter(run_pass__run=run).select_related("run_pass")
                 .order_by("-run_pass__number", "-number")[:STEP_LOG_LIMIT])[::-1]
    pending, settled = spend_by_run([run])
    return {
        "run": run, "row": live_row(run, current, pending.get(run.pk, 0), settled.get(run.pk, 0)),
        "passes": passes, "steps": steps,
        "timeline": timeline_svg(run, passes), "files": result_files(run),
        "report": _report_html(run), "events": list(RunEvent.objects.filter(run=run).order_by("-id")[:30]),
        "can_operate": user_can(user, "operate"), "controls": controls_for(run),
        "current": current, **web_context(run),
    }


def web_context(run: Run) -> dict:
    """Approvals (pending first), the filmstrip of step screenshots and any videos."""
    approvals = list(Approval.objects.filter(run=run).select_related("answered_by").order_by("-id")[:20])
    if run.kind != "web":
        return {"approvals": approvals, "pending": [a for a in approvals if a.state == ApprovalState.PENDING]}
    film = list(Step.objects.filter(run_pass__run=run).exclude(screenshot="").select_related("run_pass")
                .order_by("-run_pass__number", "-number")[:FILMSTRIP_LIMIT])[::-1]
    folder = Path(settings.RYSH_VIDEOS_DIR) / str(run.pk)
    videos = sorted(p.name for p in folder.glob("*.webm")) if folder.is_dir() else []
    return {"approvals": approvals, "pending": [a for a in approvals if a.state == ApprovalState.PENDING],
            "filmstrip": film, "videos": videos}


def run_fragments(run: Run, user) -> str:
    return render_to_string("runs/_run_live.html", {**run_context(run, user), "oob": True})


def result_files(run: Run) -> list[dict]:
    """The files this run wrote, newest first: the folder is the recipe's, shared by its runs,
    so only what changed while this run was going counts (the report is shown apart)."""
    folder = Path(run.output_dir) if run.output_dir else None
    if folder is None or not folder.is_dir() or run.started_at is None:
        return []
    start = run.started_at.timestamp() - 1
    end = run.ended_at.timestamp() + 1 if run.ended_at else float("inf")
    files = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")
             and p.name != REPORT_NAME and start <= p.stat().st_mtime <= end]
    files.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return [{"name": str(p.relative_to(folder)), "size": p.stat().st_size} for p in files]


def _report_html(run: Run):
    """This run's report, rendered from the database: run-report.md on disk is the latest run's."""
    if run.started_at is None:
        return ""
    return render_markdown(render_report(run))
