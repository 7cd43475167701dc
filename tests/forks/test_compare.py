"""runs/compare.py: two runs of a recipe side by side (docs/forks.md, "Compare two runs")."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.compare import CompareRefused, passes_aligned, runs_compare
from tests.forks.rows_f import pass_row, run_row

numbers = st.integers(min_value=0, max_value=8).map(lambda n: list(range(1, n + 1)))


@given(numbers, st.integers(0, 6), numbers, st.integers(0, 6))
def test_it_places_every_pass_once_at_its_offset(a, a_offset, b, b_offset):
    slots = passes_aligned(a, a_offset, b, b_offset)
    assert [s.a for s in slots if s.a] == a
    assert [s.b for s in slots if s.b] == b
    positions = [s.position for s in slots]
    assert positions == sorted(set(positions))
    for s in slots:
        assert s.a is None or s.position == a_offset + s.a
        assert s.b is None or s.position == b_offset + s.b
        assert s.a_inherited == (s.position <= a_offset)
        # a run never has a pass of its own where it inherited
        assert not (s.a and s.a_inherited)


@given(st.integers(1, 6), st.integers(0, 5), st.integers(1, 5))
def test_a_forks_first_pass_sits_beside_the_parents_next_pass(parent_passes, fork_pass, fork_passes):
    slots = passes_aligned(list(range(1, parent_passes + 1)), 0, list(range(1, fork_passes + 1)), fork_pass)
    first = next(s for s in slots if s.b == 1)
    assert first.position == fork_pass + 1
    assert first.a == (fork_pass + 1 if fork_pass + 1 <= parent_passes else None)
    assert all(s.b_inherited for s in slots if s.position <= fork_pass)


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
        1,
        verdict="YES",
        tokens=700,
        cost="0.02",
        files={"report.md": "rapport\n", "notes.md": "same\n", "extra.md": "x\n"},
        folder=tmp_path / "b",
    )

    shown = runs_compare(parent, fork)

    assert (shown.a_offset, shown.b_offset) == (0, 2)
    table = [(r.position, r.a and r.a.number, r.b and r.b.number, r.b_inherited) for r in shown.passes]
    assert table == [(1, 1, None, True), (2, 2, None, True), (3, 3, 1, False)]
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
def test_two_forks_of_one_parent_line_up_by_their_fork_points():
    parent = run_row()
    early = run_row(parent=parent, fork_pass=1)
    late = run_row(parent=parent, fork_pass=3)
    grandchild = run_row(parent=late, fork_pass=1)
    for run in (early, late, grandchild):
        pass_row(run, 1)
    shown = runs_compare(early, grandchild)
    assert (shown.a_offset, shown.b_offset) == (1, 4)
    assert [(r.position, bool(r.a), bool(r.b)) for r in shown.passes] == [(2, True, False), (5, False, True)]


@pytest.mark.django_db
def test_it_refuses_runs_of_two_recipes():
    with pytest.raises(CompareRefused, match="compare runs of one recipe"):
        runs_compare(run_row(name="one"), run_row(name="two"))
