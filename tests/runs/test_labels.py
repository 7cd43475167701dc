"""runs/labels.py: people's labels on the judge's verdicts (the services) and the judge's
agreement with people per judge model and `until:` version (the selector)."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from runs.models import Pass, Run, VerdictLabel
from runs.workbench import labels
from runs.workbench.labels import LabelRefused, judge_agreement, until_of, verdict_label_clear, verdict_label_set
from tests.conftest import drive
from tests.fake_model import FakeModel

pytestmark = pytest.mark.django_db

JUDGED = """
    ---
    loop:
      do:
        budget:
          size: 20p
      while:
        max_iterations: 3
        budget: 90p
        prompts:
          until: The notes exist.
    ---
    Write the notes.
"""


def armed(until: str | None) -> str:
    goal = f"  while:\n    max_iterations: 3\n    budget: 90p\n    prompts:\n      until: {until}\n" if until else ""
    return f"---\nloop:\n  do:\n    budget:\n      size: 20p\n{goal}---\nWork.\n"


@pytest.fixture
def judged(start):
    """Pass 1 judged NO, pass 2 judged YES."""
    run = start(JUDGED)
    return drive(run, FakeModel(task=[{"text": "Done."}], judge=["NO\nnot yet", "YES\nthe notes exist"]))


@pytest.fixture
def alice():
    return User.objects.create_user("alice", password="x")


def test_it_labels_a_judged_pass_and_audits_it(judged, alice):
    first = judged.passes.get(number=1)
    assert first.verdict == "NO"
    label = verdict_label_set(run_pass=first, judge_right=False, note="  it was done already  ", user=alice)
    label.refresh_from_db()
    assert (label.judge_right, label.verdict, label.note, label.by) == (False, "NO", "it was done already", alice)
    entry = AuditEntry.objects.get(action="verdict.label")
    assert (entry.actor, entry.target_type, entry.target_id) == (alice, "run", str(judged.pk))
    assert entry.detail == {"pass": 1, "judge": "wrong", "verdict": "NO", "note": "it was done already"}


def test_it_replaces_a_label_with_the_latest_persons_and_keeps_both_in_the_audit(judged, alice):
    bob = User.objects.create_user("bob", password="x")
    second = judged.passes.get(number=2)
    verdict_label_set(run_pass=second, judge_right=False, note="too early", user=alice)
    verdict_label_set(run_pass=second, judge_right=True, note="", user=bob)
    label = VerdictLabel.objects.get(run_pass=second)
    assert (label.judge_right, label.note, label.by) == (True, "", bob)
    assert VerdictLabel.objects.count() == 1
    entries = list(AuditEntry.objects.filter(action="verdict.label").order_by("id"))
    assert [e.actor for e in entries] == [alice, bob]
    assert entries[1].detail["was"] == {"judge": "wrong", "note": "too early"}


def test_it_limits_the_note(judged, alice):
    label = verdict_label_set(run_pass=judged.passes.get(number=1), judge_right=True, note="x" * 5000, user=alice)
    assert len(label.note) == labels.NOTE_MAX == 2000


def test_it_refuses_a_pass_without_a_verdict(start, alice):
    run = start(JUDGED)  # queued: make a pass that is not judged yet
    unjudged = Pass.objects.create(run=run, number=1)
    with pytest.raises(LabelRefused, match="pass 1 of run #.* has no verdict: there is nothing to label"):
        verdict_label_set(run_pass=unjudged, judge_right=True, note="", user=alice)
    assert not VerdictLabel.objects.exists() and not AuditEntry.objects.filter(action="verdict.label").exists()


def test_it_clears_a_label_and_audits_it(judged, alice):
    first = judged.passes.get(number=1)
    assert verdict_label_clear(run_pass=first, user=alice) is False  # nothing to clear
    verdict_label_set(run_pass=first, judge_right=True, note="fine", user=alice)
    assert verdict_label_clear(run_pass=first, user=alice) is True
    assert not VerdictLabel.objects.exists()
    entry = AuditEntry.objects.get(action="verdict.unlabel")
    assert entry.detail == {"pass": 1, "was": {"judge": "right", "note": "fine"}}


def test_it_reads_the_until_a_run_was_armed_with(monkeypatch):
    labels._UNTILS.clear()
    reads = []
    real = labels.parse_recipe
    monkeypatch.setattr(labels, "parse_recipe", lambda *a, **k: reads.append(1) or real(*a, **k))
    assert until_of(armed("The list is done."), "job.md", "task") == "The list is done."
    assert until_of(armed(None), "job.md", "task") == labels.NO_GOAL
    assert until_of("---\nloop: [\n---\nx\n", "job.md", "task") == labels.UNREADABLE
    assert len(reads) == 3
    assert until_of(armed("The list is done."), "job.md", "task") == "The list is done."
    assert len(reads) == 3  # the same text is read once


# -- the judge's agreement with people, on a hand-made table ------------------------------------------


def day(d: int) -> datetime:
    return datetime(2026, 11, d, 12, tzinfo=UTC)


def make_run(*, until: str, judge: str, on: int, verdicts: list[str], name: str = "notes") -> Run:
    run = Run.objects.create(
        kind="task",
        name=name,
        target=f"task/{name}",
        recipe_path=f".rysh/automations/tasks/{name}.md",
        recipe_text=armed(until),
        provider="anthropic",
        executor_model="claude-x",
        judge_model=judge,
        output_dir="/tmp/out",
        state="finished",
    )
    Run.objects.filter(pk=run.pk).update(created_at=day(on))
    for number, verdict in enumerate(verdicts, start=1):
        Pass.objects.create(run=run, number=number, verdict=verdict)
    return run


def label(run: Run, number: int, right: bool, user) -> None:
    verdict_label_set(run_pass=run.passes.get(number=number), judge_right=right, note="", user=user)


def test_it_counts_agreement_per_judge_model_and_until_version(alice):
    old, new = "The old goal.", "The new goal."
    a = make_run(until=old, judge="haiku", on=1, verdicts=["NO", "YES"])
    b = make_run(until=old, judge="haiku", on=2, verdicts=["NO", "NO", "YES"])
    c = make_run(until=old, judge="sonnet", on=3, verdicts=["YES"])
    d = make_run(until=new, judge="haiku", on=5, verdicts=["NO", "YES"])
    e = make_run(until=new, judge="sonnet", on=6, verdicts=["NO", "YES"])
    make_run(until=new, judge="sonnet", on=9, verdicts=["YES"])  # not labelled: only dates the version
    make_run(until=old, judge="haiku", on=4, verdicts=["NO"], name="other")  # another recipe
    for run, number, right in [
        (a, 1, True), (a, 2, False), (b, 1, True), (b, 2, True), (b, 3, True),
        (c, 1, False),
        (d, 1, True), (d, 2, True),
        (e, 1, False), (e, 2, False),
    ]:  # fmt: skip
        label(run, number, right, alice)
    other = Run.objects.get(name="other")
    label(other, 1, False, alice)

    rows = judge_agreement(kind="task", name="notes")

    got = [
        (r.judge_model, r.until, r.first_seen.day, r.last_seen.day, r.labelled, r.agreed, r.disagreed, r.percent)
        for r in rows
    ]
    assert got == [
        ("haiku", new, 5, 9, 2, 2, 0, 100),
        ("sonnet", new, 5, 9, 2, 0, 2, 0),
        ("haiku", old, 1, 3, 5, 4, 1, 80),
        ("sonnet", old, 1, 3, 1, 0, 1, 0),
    ]
    assert rows[1].disagreed_links == [
        (f"/runs/{e.pk}/#pass-1", f"#{e.pk} pass 1"),
        (f"/runs/{e.pk}/#pass-2", f"#{e.pk} pass 2"),
    ]
    assert rows[2].disagreed_links == [(f"/runs/{a.pk}/#pass-2", f"#{a.pk} pass 2")]
    assert rows[0].disagreed_links == []


def test_it_puts_runs_whose_text_no_longer_reads_under_unreadable(alice):
    run = make_run(until="Goal.", judge="haiku", on=1, verdicts=["YES"])
    Run.objects.filter(pk=run.pk).update(recipe_text="---\nloop: [\n---\nx\n")
    label(run, 1, True, alice)
    [row] = judge_agreement(kind="task", name="notes")
    assert (row.until, row.labelled, row.percent) == (labels.UNREADABLE, 1, 100)


def test_it_has_no_rows_when_nothing_is_labelled():
    make_run(until="Goal.", judge="haiku", on=1, verdicts=["YES"])
    assert judge_agreement(kind="task", name="notes") == []
