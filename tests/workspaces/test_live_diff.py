"""The run page's Changes section is live: after each tool call that may write (edit, file_write,
bash) the copy is measured, and the fragment pushed with the step's event shows it mid-pass; a run
that ended with no change says so."""

import pytest

from agents.coding_tools import Throttled
from runs.live import fragments
from runs.models import Run, RunEvent
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.workspaces.conftest import FIX

pytestmark = pytest.mark.django_db


def changes_section(html: str) -> str:
    start = html.index('<section id="run-changes"')
    return html[start : html.index("</section>", start)]


def test_the_changes_section_shows_each_edit_while_the_pass_runs(start_fix):
    run = start_fix()
    seen = []

    def look(request):
        """At each model call: the run page's live fragments as a push after the last step
        renders them (the step's event is what pushes them)."""
        if request.purpose == "task":
            now = Run.objects.get(pk=run.pk)
            steps = RunEvent.objects.filter(run=now, kind="step").count()
            seen.append((steps, changes_section(fragments.run_fragments(now, frozenset({"edit"})))))

    model = FakeModel(
        task=[
            {"text": "look", "tools": [tool("bash", command="ls")]},
            {"text": "fix", "tools": [tool("edit", **FIX)]},
            {"text": "a note", "tools": [tool("bash", command="echo noted > notes.txt")]},
            {"text": "a failed edit", "tools": [tool("edit", path="calc.py", old_string="nowhere", new_string="x")]},
            {"text": "Fixed."},
        ],
        on_call=look,
    )
    run = drive(run, model)
    assert run.cause == "fulfilled"
    assert [steps for steps, _ in seen] == [0, 1, 2, 3, 4]
    assert "No change yet." in seen[1][1]  # after `ls`: measured, nothing changed
    assert "<code>pkg/calc.py</code>" in seen[2][1] and "+1" in seen[2][1]  # mid-pass, right after the edit
    assert "notes.txt" not in seen[2][1]
    assert "<code>pkg/notes.txt</code>" in seen[3][1] and "2 files" in seen[3][1]
    assert seen[4][1] == seen[3][1]  # a failed edit changed nothing
    assert "Keep</button>" not in seen[3][1]  # no keep while the run works


def test_a_run_that_ended_with_no_change_says_no_change(start_fix):
    run = drive(start_fix(), FakeModel(task=[{"text": "look", "tools": [tool("bash", command="ls")]}, {"text": "Ok."}]))
    section = changes_section(fragments.run_fragments(run, frozenset({"edit"})))
    assert "No change: the run ended without changing its working copy." in section
    assert "yet" not in section


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_slow_measurement_spaces_the_next_and_none_is_lost():
    clock, calls = Clock(), []

    def measure():
        calls.append(clock.now)
        clock.now += 1.0  # a large tree: one second a measurement

    throttled = Throttled(measure, clock=clock)
    throttled(due=False)
    assert calls == []  # nothing written, nothing measured
    throttled(due=True)
    assert calls == [0.0]
    clock.now = 5.0
    throttled(due=True)  # within 10 times the last measurement: owed
    assert calls == [0.0]
    clock.now = 10.5
    throttled(due=False)  # the next call after the gap measures what was owed
    assert calls == [0.0, 10.5]


def test_a_quick_measurement_leaves_no_gap():
    clock, calls = Clock(), []
    throttled = Throttled(lambda: calls.append(clock.now), clock=clock)
    for _ in range(3):
        throttled(due=True)
    assert len(calls) == 3
