"""runs/forks/compare.py: two runs of a recipe side by side (docs/forks.md, "Compare two runs")."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.forks.compare import CompareRefused, passes_aligned, runs_compare
from tests.forks.rows_f import pass_row, run_row


def run_passes(start: int, count: int) -> list[int]:
    """A run's pass numbers: a fork numbers on from its fork point."""
    return list(range(start + 1, start + count + 1))


@given(st.integers(0, 6), st.integers(0, 8), st.integers(0, 6), st.integers(0, 8))
def test_it_places_every_pass_once_by_its_number(a_start, a_count, b_start, b_count):
    a, b = run_passes(a_start, a_count), run_passes(b_start, b_count)
    slots = passes_aligned(a, a_start, b, b_start)
    assert [s.a for s in slots if s.a] == a
    assert [s.b for s in slots if s.b] == b
    positions = [s.position for s in slots]
    assert positions == sorted(set(positions)) and positions == list(range(1, len(positions) + 1))
    for s in slots:
        assert s.a in (None, s.position) and s.b in (None, s.position)
        assert s.a_inherited == (s.position <= a_start) and s.b_inherited == (s.position <= b_start)
        assert not (s.a and s.a_inherited) and not (s.b and s.b_inherited)


@given(st.integers(1, 6), st.integers(0, 5), st.integers(1, 5))
def test_a_forks_first_pass_sits_beside_the_parents_next_pass(parent_passes, fork_pass, fork_passes):
    slots = passes_aligned(run_passes(0, parent_passes), 0, run_passes(fork_pass, fork_passes), fork_pass)
    first = next(s for s in slots if s.b)
    assert first.position == fork_pass + 1
    assert first.a == (fork_pass + 1 if fork_pass + 1 <= parent_passes else None)
    assert [s.position for s in slots if s.b_inherited] == list(range(1, fork_pass + 1))


@pytest.mark.django_db
def test_it_compares_a_fork_with_its_parent(tmp_path):
    parent = run_row()
    for n in (1, 2, 3):
        pass_row(
            parent,
            n,
            tokens=1000 * n,
            files={"report.md": f"report v{n}\n", "notes.md": "same\n"},
            folder=tmp_path / "a",
        )
    fork = run_row(
        parent=parent, fork_pass=2, fork_edits={"prompt": "Write the report, in French.\n", "until": "Done."}
    )
    pass_row(
        fork,
        3,
        verdict="YES",
        tokens=700,
        cost="0.02",
        files={"report.md": "rapport\n", "notes.md": "same\n", "extra.md": "x\n"},
        folder=tmp_path / "b",
    )

    shown = runs_compare(parent, fork)

    assert (shown.a_start, shown.b_start) == (0, 2)
    table = [(r.position, r.a and r.a.number, r.b and r.b.number, r.b_inherited) for r in shown.passes]
    assert table == [(1, 1, None, True), (2, 2, None, True), (3, 3, 3, False)]
    third = shown.passes[2]
    assert (third.a.tokens, third.b.tokens, third.b.verdict, third.b.cost) == (3000, 700, "YES", Decimal("0.02"))
    assert third.a.seconds == pytest.approx(30, abs=1)
    statuses = {f.name: f.status for f in shown.files}
    assert statuses == {"report.md": "changed", "notes.md": "same", "extra.md": "only in B"}
    changed = next(f for f in shown.files if f.name == "report.md")
    assert [(d.kind, d.text) for d in changed.diff if d.kind in ("add", "del")] == [
        ("del", "report v3"),
        ("add", "rapport"),
    ]
    assert shown.prompt_a == "Write the report.\n"
    assert shown.prompt_b == "Write the report, in French.\n"
    assert [d.text for d in shown.prompt_diff if d.kind == "add"] == ["Write the report, in French."]
    assert ("until", "as the recipe", "Done.") in shown.settings
    assert shown.diff_a.missing == "no working copy"


@pytest.mark.django_db
def test_two_forks_line_up_by_their_pass_numbers():
    parent = run_row()
    early = run_row(parent=parent, fork_pass=1)
    late = run_row(parent=parent, fork_pass=3)
    grandchild = run_row(parent=late, fork_pass=4)
    pass_row(early, 2)
    pass_row(late, 4)
    pass_row(grandchild, 5)
    shown = runs_compare(early, grandchild)
    assert (shown.a_start, shown.b_start) == (1, 4)
    rows = [(r.position, bool(r.a), r.a_inherited, bool(r.b), r.b_inherited) for r in shown.passes]
    assert rows == [
        (1, False, True, False, True),
        (2, True, False, False, True),
        (3, False, False, False, True),
        (4, False, False, False, True),
        (5, False, False, True, False),
    ]


@pytest.mark.django_db
def test_it_refuses_runs_of_two_recipes():
    with pytest.raises(CompareRefused, match="compare runs of one recipe"):
        runs_compare(run_row(name="one"), run_row(name="two"))
