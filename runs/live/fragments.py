"""Fragments of current state, rendered from the same partials the pages use.

A push is never a diff or an event to replay: it is the whole current fragment with a stable
id, swapped out of band, so a browser that reconnects (or misses a push) only needs the
latest one. Pages and pushes call the same functions here.

The fragments depend on who looks only through a few permissions (READS: "operate" shows the
buttons, "audit" the addresses in a run's audit lines, "label" the judge right / wrong forms), so they take those grants, not a user:
the live hub renders once per page and set of grants and sends that HTML to every such socket.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from django.conf import settings
from django.template.loader import render_to_string

from audit.selectors import audit_for_run
from catalogue.markdown import render_markdown
from runs import selectors
from runs.live import sections
from runs.models import ApprovalState, Run
from runs.results.report import render_report
from runs.results.timeline import timeline_svg
from runs.states import allowed_controls
from runs.workbench.labels import run_passes_labelled
from rysh_site.roles import NEEDS, roles_of
from spend.selectors import installation_quota_bar
from workspaces.selectors import workspace_context

STEP_LOG_LIMIT = 200
FILMSTRIP_LIMIT = 60
RECENT_LIMIT = 15
EVENT_LIMIT = 30
APPROVAL_LIMIT = 20
INBOX_LIMIT = 200
HOME_FRAGMENTS = "runs/dashboard/_live.html"
RUN_FRAGMENTS = "runs/run_detail/_live.html"
INBOX_FRAGMENTS = "runs/approvals/_live.html"
# each section of RUN_FRAGMENTS by its id (runs/live/sections.py), the templates _live.html includes
SECTION_TEMPLATES = {
    sections.HEAD: "runs/run_detail/_head.html",
    sections.APPROVALS: "runs/run_detail/_approvals.html",
    sections.FILMSTRIP: "runs/run_detail/_filmstrip.html",
    sections.PASSES: "runs/run_detail/_passes.html",
    sections.AGENTS: "runs/run_detail/_agents.html",
    sections.STEPS: "runs/run_detail/_steps.html",
    sections.CHANGES: "workspaces/_changes.html",
    sections.FILES: "runs/run_detail/_files.html",
    sections.REPORT: "runs/run_detail/_report.html",
    sections.EVENTS: "runs/run_detail/_events.html",
}
NAV_FRAGMENT = "runs/shared/_nav_approvals.html"
# the permissions each live page's fragments read; nothing else about the user reaches them
READS = {
    "home": frozenset({"operate"}),
    "run": frozenset({"operate", "audit", "label", "edit"}),  # edit: keep / discard a working copy
    "approvals": frozenset({"operate"}),
    "nav": frozenset(),
}


def grants(user) -> frozenset[str]:
    """The permissions any live fragment reads, as this user holds them (one roles lookup)."""
    mine = roles_of(user)
    return frozenset(action for action in READS["run"] | READS["home"] if mine & NEEDS[action])


def fragments(page: str, run_id: int | None, can: frozenset[str]) -> str:
    """What a live socket of `page` is sent: its fragments and the nav's count, out of band."""
    if page == "approvals":
        return inbox_fragments(can) + nav_fragment()
    if page == "nav":
        return nav_fragment()
    if page == "run":
        return run_fragments(Run.objects.get(pk=run_id), can)
    return home_fragments(can)


def home_context(can: frozenset[str]) -> dict:
    return {
        "rows": selectors.live_rows(selectors.runs_active()),
        "recent": selectors.runs_recent(limit=RECENT_LIMIT),
        "can_operate": "operate" in can,
        "quota_bar": installation_quota_bar,  # called by the page's template only, not by every push
    }


def home_fragments(can: frozenset[str]) -> str:
    return render_to_string(HOME_FRAGMENTS, {**home_context(can), "oob": True}) + nav_fragment()


def inbox_context(can: frozenset[str]) -> dict:
    """/approvals/: every pending approval across runs, with what the nav's count says."""
    pending = selectors.approvals_pending(limit=INBOX_LIMIT)
    return {"pending": pending, "approvals_waiting": len(pending), "can_operate": "operate" in can}


def inbox_fragments(can: frozenset[str]) -> str:
    return render_to_string(INBOX_FRAGMENTS, {**inbox_context(can), "oob": True})


def nav_fragment() -> str:
    """The nav's count of approvals waiting, out of band: every live page keeps it current."""
    return render_to_string(NAV_FRAGMENT, {"approvals_waiting": selectors.approvals_pending_count(), "oob": True})


def run_context(run: Run, can: frozenset[str]) -> dict:
    """A run page's context. Each value that costs a query is computed when a template first
    reads it (and once): a push of a few sections reads only what those sections show."""
    passes = run_passes_labelled(run)  # each with its people's label (`p.label`); the head reads it too
    current = passes[-1] if passes else None
    return {
        "run": run,
        "row": Once(lambda: _row(run, current)),
        "passes": passes,
        "gated": any(p.gate_command for p in passes),  # a coding run's until_command
        "steps": Once(lambda: selectors.run_steps_recent(run, limit=STEP_LOG_LIMIT)),
        "show_thinking": settings.RYSH_SHOW_THINKING,  # the model's thinking text: an admin's call
        "timeline": Once(lambda: timeline_svg(run, passes)),
        "files": Once(lambda: selectors.run_result_files(run)),
        "report": Once(lambda: _report_html(run)),
        "events": Once(lambda: selectors.run_events_recent(run, limit=EVENT_LIMIT)),
        "todo": Once(lambda: selectors.run_todo(run)),  # the agent's plan (docs/agent-tools.md)
        "sub_agents": Once(lambda: selectors.run_sub_agents(run)),
        "pruned": Once(lambda: selectors.run_pruned(run) if run.is_finished else {}),  # what retention removed
        "audit": Once(lambda: audit_for_run(run.pk)),  # who did what (runs/run_detail/_audit.html)
        "can_read_audit": "audit" in can,
        "can_operate": "operate" in can,
        "can_label": "label" in can,
        "controls": Once(lambda: allowed_controls(run)),
        "quota_wait": Once(lambda: selectors.quota_wait(run)),
        "sandbox_wait": Once(lambda: selectors.sandbox_wait(run)),  # shown beside the copy still to be made
        "current": current,
        **web_context(run),
        **workspace_context(run, can),
    }


class Once:
    """A context value computed when a template first reads it, then kept. Django's templates
    call what they find callable (with no arguments), so `{{ steps }}` and `{% for s in steps %}`
    read the value; Python code that needs it calls it."""

    def __init__(self, compute):
        self.compute = compute
        self.done = False
        self.value = None

    def __call__(self):
        if not self.done:
            self.value, self.done = self.compute(), True
        return self.value


def _row(run: Run, current):
    pending, settled = selectors.spend_by_run([run])
    return selectors.live_row(run, current, pending.get(run.pk, 0), settled.get(run.pk, 0))


def web_context(run: Run) -> dict:
    """Approvals (pending first), the filmstrip of step screenshots and any videos."""
    approvals = Once(lambda: selectors.run_approvals(run, limit=APPROVAL_LIMIT))
    context = {
        "approvals": approvals,
        "pending": Once(lambda: [a for a in approvals() if a.state == ApprovalState.PENDING]),
    }
    if run.kind != "web":
        return context
    return {
        **context,
        "filmstrip": Once(lambda: selectors.run_filmstrip(run, limit=FILMSTRIP_LIMIT)),
        "videos": Once(lambda: selectors.run_videos(run)),
    }


def run_fragments(run: Run, can: frozenset[str]) -> str:
    return render_to_string(RUN_FRAGMENTS, {**run_context(run, can), "oob": True}) + nav_fragment()


def run_sections(run_id: int, can: frozenset[str], wanted: Iterable[str]) -> str:
    """Only these sections of a run's page (runs/live/sections.py), out of band, in page order:
    what a push sends for a change that can touch no others."""
    run = Run.objects.get(pk=run_id)
    context = {**run_context(run, can), "oob": True}
    wanted = set(wanted)
    html = [render_to_string(SECTION_TEMPLATES[key], context) for key in SECTION_TEMPLATES if key in wanted]
    return "".join(html) + (nav_fragment() if sections.NAV in wanted else "")


def _report_html(run: Run):
    """This run's report, rendered from the database: run-report.md on disk is the latest run's."""
    if run.started_at is None:
        return ""
    return _markdown(render_report(run))


@lru_cache(maxsize=64)
def _markdown(text: str):
    """A report's HTML by its text: a finished run's page is pushed the same report on every
    change of its events or labels, and its markdown need not be parsed again each time."""
    return render_markdown(text)
