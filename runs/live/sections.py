"""Which sections of a run's page a change can touch: the one place that says so.

A run page's live fragment (runs/run_detail/_live.html) is a row of sections, each with a stable
id and a template of its own. When the live hub learns that a run changed it also learns the
kinds of the events recorded (runs/states.py EventKind); a change of kinds that are all in
TOUCHES renders only the sections they name, and the browser swaps just those (out of band).
A kind not named here (a state change, a control, a note, whatever is new) renders the whole
fragment: a section left out would go stale, a section put in costs only its render.

Pure: no Django, no database.
"""

from __future__ import annotations

from collections.abc import Iterable

from runs.states import EventKind

# the run page's sections in page order: their element ids, as the push carries them
HEAD = "run-head"  # state, pass, last verdict, cost, the budget bar, the controls
APPROVALS = "run-approvals"
FILMSTRIP = "run-filmstrip"  # a web run's screenshots and videos
PASSES = "run-timeline"  # the passes table (verdicts, judge's reasons, tokens) and the timeline
AGENTS = "run-agents"  # the agent's plan (todo) and its sub-agents
STEPS = "run-steps"
CHANGES = "run-changes"  # a coding run's working copy
FILES = "run-files"
REPORT = "run-report"  # run-report.md: totals, passes, verdicts
EVENTS = "run-events"  # every event is one more line here
NAV = "nav-approvals"  # the nav's count of approvals waiting
RUN_SECTIONS = (HEAD, APPROVALS, FILMSTRIP, PASSES, AGENTS, STEPS, CHANGES, FILES, REPORT, EVENTS, NAV)

# what each kind of event can change on its run's page, besides the line in the events list
TOUCHES: dict[str, frozenset[str]] = {
    str(kind): frozenset(sections) | {EVENTS}
    for kind, sections in {
        # a step adds a step, counts tokens and cost (head, passes, sub-agents, report), may
        # change the working copy (after a tool call) and, on a web run, adds a screenshot
        EventKind.STEP: {HEAD, PASSES, AGENTS, STEPS, FILMSTRIP, CHANGES, REPORT},
        EventKind.PASS_STARTED: {HEAD, PASSES, AGENTS, REPORT},
        EventKind.GATE: {HEAD, PASSES, CHANGES, REPORT},
        EventKind.WRAP_UP: {HEAD, PASSES, REPORT},
        EventKind.JUDGING: {HEAD, PASSES, REPORT},
        EventKind.VERDICT: {HEAD, PASSES, REPORT},
        # a pass's end keeps its result files and measures the working copy
        EventKind.PASS_ENDED: {HEAD, PASSES, CHANGES, FILES, REPORT},
        # an approval waits or is answered: the run's state (head, report), the nav's count, and
        # the steps list, where the step whose tool call waits shows that call
        EventKind.APPROVAL_REQUESTED: {HEAD, APPROVALS, STEPS, REPORT, NAV},
        EventKind.APPROVAL_ANSWERED: {HEAD, APPROVALS, STEPS, REPORT, NAV},
        EventKind.APPROVAL_STALE: {HEAD, APPROVALS, STEPS, REPORT, NAV},
        EventKind.TODO: {AGENTS},
        EventKind.SUB_AGENT: {AGENTS},
        EventKind.VIDEO: {FILMSTRIP},
    }.items()
}


def sections_for(kinds: Iterable[str] | None) -> frozenset[str] | None:
    """The sections a change of these kinds can touch, or None for all of them (a kind not in
    TOUCHES, or kinds not known: the whole fragment)."""
    if kinds is None:
        return None
    touched: set[str] = set()
    for kind in kinds:
        if kind not in TOUCHES:
            return None
        touched |= TOUCHES[kind]
    return frozenset(touched) if touched else None


def union(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """Two changes' sections together (None, all of them, absorbs anything)."""
    return None if a is None or b is None else a | b
