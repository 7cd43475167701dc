"""The recipe page's eval cases: each with its assertions in brief (broken ones with their file and
line), its recent results and pass rate over time as an inline SVG chart, flaky ones marked; and
the pure rules behind it (flaky, rolling pass rate, the chart, the side-by-side totals)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalogue.sync import recipes_sync
from evals.compare import Cell, case_histories, chart_points, compare, is_flaky, rolling_pass_rate, suite_rates
from evals.models import CaseResult, Suite
from tests.evals.review_helpers import CASES, cased, grace, linus, plans  # noqa: F401
from tests.recipes_git import work  # noqa: F401

OUTCOME = st.sampled_from(["passed", "failed", "error", "broken", "running"])
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def cells(outcomes, digests=None):
    digests = digests or ["v"] * len(outcomes)
    return [
        Cell("c", o, digest=d, suite_id=i + 1, when=T0 + timedelta(minutes=i))
        for i, (o, d) in enumerate(zip(outcomes, digests))
    ]


# --- pure ----------------------------------------------------------------------------------------


@given(st.lists(st.tuples(st.sampled_from(["passed", "failed", "error"]), st.sampled_from("ab")), max_size=12))
def test_flaky_is_exactly_passed_and_failed_on_one_version(pairs):
    outcomes = [o for o, _ in pairs]
    digests = [d for _, d in pairs]
    expected = any({o for o, d in pairs if d == digest} >= {"passed", "failed"} for digest in set(digests))
    assert is_flaky(cells(outcomes, digests)) == expected


def test_a_flip_across_versions_is_not_flaky():
    assert not is_flaky(cells(["passed", "failed"], ["v1", "v2"]))
    assert is_flaky(cells(["passed", "failed", "passed"], ["v1", "v2", "v1"])) is False
    assert is_flaky(cells(["passed", "failed", "failed"], ["v1", "v2", "v1"])) is True


@given(st.lists(OUTCOME, max_size=30), st.integers(min_value=1, max_value=8))
def test_the_rolling_pass_rate_is_a_share_of_the_last_results(outcomes, window):
    rates = rolling_pass_rate(cells(outcomes), window=window)
    graded = [o == "passed" for o in outcomes if o != "running"]
    assert len(rates) == len(graded)
    assert all(0 <= r <= 1 for r in rates)
    if graded:
        last = graded[-window:]
        assert rates[-1] == pytest.approx(sum(last) / len(last))


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=40))
def test_the_chart_stays_in_its_box_and_higher_is_higher(values):
    points = [tuple(map(float, p.split(","))) for p in chart_points(values, width=120, height=24).split()]
    assert len(points) == len(values)
    assert all(0 <= x <= 120 and 0 <= y <= 24 for x, y in points)
    xs = [x for x, _ in points]
    assert xs == sorted(xs)
    for (_, y1), (_, y2), v1, v2 in zip(points, points[1:], values, values[1:]):
        if v1 > v2:  # drawn to a tenth of a pixel: a clear difference is a visible one
            assert y1 <= y2 and (y1 < y2 or v1 - v2 < 0.01)


@given(
    st.lists(st.tuples(st.sampled_from("abcd"), OUTCOME, st.integers(0, 1000)), max_size=8, unique_by=lambda t: t[0]),
    st.lists(st.tuples(st.sampled_from("abcd"), OUTCOME, st.integers(0, 1000)), max_size=8, unique_by=lambda t: t[0]),
)
def test_the_comparison_has_a_row_per_case_of_either_side(main, change):
    m = [Cell(n, o, tokens=t, cost=Decimal(t) / 1000) for n, o, t in main]
    c = [Cell(n, o, tokens=t, cost=Decimal(t) / 1000) for n, o, t in change]
    comparison = compare(m, c)
    assert [r.name for r in comparison.rows] == sorted({n for n, *_ in main} | {n for n, *_ in change})
    assert comparison.main.passed == sum(o == "passed" for _, o, _ in main)
    assert comparison.tokens_delta == sum(t for *_, t in change) - sum(t for *_, t in main)
    if m and c:
        assert comparison.cost_delta == comparison.change.cost - comparison.main.cost
        assert comparison.pass_rate_delta == pytest.approx(comparison.change.pass_rate - comparison.main.pass_rate)
    assert comparison.running == any(o == "running" for _, o, _ in main + change)


def test_suite_rates_leave_out_suites_still_running():
    rows = [Cell("a", "passed", suite_id=1, when=T0), Cell("b", "failed", suite_id=1, when=T0)]
    rows += [Cell("a", "passed", suite_id=2, when=T0 + timedelta(1)), Cell("b", "running", suite_id=2)]
    assert suite_rates(rows) == [(1, 0.5)]
    history = case_histories(rows)
    assert [c.suite_id for c in history["a"].recent] == [2, 1]  # newest first


# --- the page ----------------------------------------------------------------------------------


def suite_with(target, results, *, side="main", sha="abc1234567", minutes=0):
    suite = Suite.objects.create(target=target, side=side, commit_sha=sha, state="done")
    Suite.objects.filter(pk=suite.pk).update(created_at=T0 + timedelta(minutes=minutes))
    for name, (state, digest) in results.items():
        CaseResult.objects.create(
            suite=suite,
            name=name,
            folder=f"{CASES}/{name}",
            state=state,
            digest=digest,
            tokens=100,
            cost=Decimal("0.0100"),
            ended_at=T0 + timedelta(minutes=minutes),
        )
    return suite


@pytest.mark.django_db
def test_the_recipe_page_lists_cases_history_charts_and_flaky(linus, cased):
    cased.write("tasks/report/evals/half-done/task.md", "Write it.\n")  # no expect.yaml: broken
    cased.write("tasks/report/evals/bad-regex/task.md", "Write it.\n")
    cased.write("tasks/report/evals/bad-regex/expect.yaml", 'output_matches: ["(unclosed"]\n')
    cased.commit("Broken cases")
    recipes_sync()
    for minutes, (a, b) in enumerate([("passed", "failed"), ("failed", "failed"), ("passed", "passed")]):
        suite_with(
            "task/report", {"writes-report": (a, "same"), "touches-nothing": (b, f"v{minutes}")}, minutes=minutes
        )
    page = linus.get("/recipes/task/report/").content.decode()
    section = page[page.index('<section id="evals">') :]
    section = section[: section.index("</section>")]
    row = re.search(r'id="case-writes-report".*?</tr>', section, re.S).group(0)
    assert 'class="flaky"' in row  # passed, failed, passed on the same version
    assert "files changed ⊆ <code>report.md</code>" in row and "at most 100000 tokens" in row
    assert row.count('class="eval eval-') == 3 and "67%" in row and "<polyline points=" in row
    other = re.search(r'id="case-touches-nothing".*?</tr>', section, re.S).group(0)
    assert 'class="flaky"' not in other  # it flipped, but each time on another version
    assert "files changed ⊆ (none)" in other
    broken = re.search(r'id="case-half-done".*?</tr>', section, re.S).group(0)
    assert f"{CASES}/half-done/expect.yaml: missing" in broken
    assert re.search(rf"{CASES}/bad-regex/expect.yaml:1: output_matches", section)
    assert 'aria-label="pass rate of the last 3 suites"' in section  # main's suites only
    suite_with("task/report", {"writes-report": ("failed", "other")}, side="change", minutes=9)
    page = linus.get("/recipes/task/report/").content.decode()
    assert 'aria-label="pass rate of the last 3 suites"' in page and "(change, <code>" in page
    assert "New case" in section and 'href="/recipes/task/report/cases/writes-report/expect.yaml/"' in section


@pytest.mark.django_db
def test_a_viewer_sees_the_cases_but_no_editing(cased):
    from django.test import Client

    from tests.recipes_git import login, make_user

    viewer = login(Client(), make_user("vera", role="viewer"))
    page = viewer.get("/recipes/task/report/").content.decode()
    assert 'id="case-writes-report"' in page and "New case" not in page
    assert viewer.get("/recipes/task/report/cases/new/").status_code == 403
    assert viewer.get("/recipes/task/report/cases/writes-report/task.md/").status_code == 403


@pytest.mark.django_db
def test_editing_a_case_file_proposes_a_change_and_refuses_a_broken_one(grace, linus, cased, plans):
    path = f"{CASES}/writes-report/expect.yaml"
    page = grace.get("/recipes/task/report/cases/writes-report/expect.yaml/").content.decode()
    assert "report.md" in page and path in page
    page = grace.post(
        "/recipes/task/report/cases/writes-report/expect.yaml/", {"text": "files_changd: []\n"}
    ).content.decode()
    assert "nothing was saved" in page and f"{path}:1" in page
    page = grace.post(
        "/recipes/task/report/cases/writes-report/expect.yaml/", {"text": 'files_changed: ["*.md"]\n'}, follow=True
    ).content.decode()
    assert "Proposed as change request" in page
    from reviews.models import ChangeRequest

    change = ChangeRequest.objects.latest("id")
    assert (change.action, change.path, change.kind, change.name) == ("edit", path, "task", "report")
    assert grace.get(f"/changes/{change.pk}/edit/").url == f"/changes/{change.pk}/case/"
    page = grace.post(
        f"/changes/{change.pk}/case/", {"text": 'files_changed: ["report.md", "notes.md"]\n'}, follow=True
    )
    assert "Revised" in page.content.decode()
    change.refresh_from_db()
    assert "notes.md" in change.proposed_text
    assert cased.head() == change.base_sha  # nothing on main until someone merges it
