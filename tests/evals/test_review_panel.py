"""The Evals panel on a change request: both sides' suites side by side, totals and deltas, the
Run button for editors and admins only (with the suites' worst case first), polling while a suite
runs, a refusal said as a message; a case change shows its files' diffs and no cost delta."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from budgets.units import format_tokens
from evals import services
from evals.services import SuiteRefused
from tests.evals.review_helpers import CASES, cased, grace, linus, plans, propose, record_suite  # noqa: F401
from tests.recipes_git import login, make_user, work  # noqa: F401

pytestmark = pytest.mark.django_db
FAILED = ("failed", 900, "0.0120", [("files_changed", "report.md is outside files_changed ([])")])


def test_it_shows_both_sides_with_totals_and_what_failed(grace, linus, plans):
    change = propose(grace)
    record_suite(change, "main", {"writes-report": ("passed", 1000, "0.0100", []), "touches-nothing": FAILED})
    record_suite(
        change,
        "change",
        {"writes-report": ("passed", 1500, "0.0150", []), "touches-nothing": ("passed", 800, "0.0080", [])},
    )
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    panel = page[page.index('id="evals"') :]
    row = re.search(r'id="eval-row-touches-nothing".*?</tr>', panel, re.S).group(0)
    assert "eval-failed" in row and "eval-passed" in row
    assert "main:</span> files_changed: report.md is outside files_changed ([])" in row
    assert "$0.0120" in row and "$0.0080" in row
    totals = re.search(r'class="evals-totals".*?</tr>', panel, re.S).group(0)
    assert "1/2 passed (50%)" in totals and "2/2 passed (100%)" in totals
    assert "Δ pass rate +50%" in totals and "Δ cost +$0.0010" in totals and "Δ tokens +400" in totals
    assert "Run evals (main and change)" in panel and f"{format_tokens(80_000_000)} tokens" in panel
    assert {side for _, side, _ in plans} == {"main", "change"}
    assert "every 2s" not in panel  # nothing running: no polling


def test_a_running_suite_polls_its_fragment_and_has_no_button(grace, linus, plans):
    change = propose(grace)
    record_suite(change, "main", {"writes-report": ("passed", 10, None, [])})
    record_suite(change, "change", {"writes-report": ("pending", 0, None, [])}, state="running")
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert f'hx-get="/changes/{change.pk}/evals/" hx-trigger="every 2s"' in page
    assert "Run evals" not in page
    fragment = linus.get(f"/changes/{change.pk}/evals/").content.decode()
    assert fragment.lstrip().startswith("{#") is False and 'id="evals"' in fragment
    assert "<html" not in fragment and "eval-running" in fragment


def test_the_button_is_for_editors_and_admins_only(grace, cased, plans, monkeypatch):
    change = propose(grace)
    started = []
    monkeypatch.setattr(services, "change_suites_start", lambda **kw: started.append(kw) or (None, None))
    for role in ("viewer", "operator"):
        other = login(Client(), make_user(f"u-{role}", role=role))
        assert "Run evals" not in other.get(f"/changes/{change.pk}/").content.decode()
        assert other.post(f"/changes/{change.pk}/evals/run/").status_code == 403
    assert started == []
    anonymous = Client()
    assert anonymous.post(f"/changes/{change.pk}/evals/run/").status_code == 302  # to the login page
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(make_user("admin-csrf", role="admin"))
    assert csrf.post(f"/changes/{change.pk}/evals/run/").status_code == 403
    assert started == []


def test_pressing_run_starts_both_suites_or_says_why_not(grace, linus, plans, monkeypatch):
    change = propose(grace)
    calls = []

    def start(*, change, user, provider=None):
        calls.append((change.pk, user.username))
        return record_suite(change, "main", {}), record_suite(change, "change", {})

    monkeypatch.setattr(services, "change_suites_start", start)
    page = linus.post(f"/changes/{change.pk}/evals/run/", follow=True).content.decode()
    assert calls == [(change.pk, "linus")] and "Evals started: suite #" in page

    def refuse(**kwargs):
        raise SuiteRefused("the suite's worst case 40b is over what the team's daily quota leaves (1b)")

    monkeypatch.setattr(services, "change_suites_start", refuse)
    page = linus.post(f"/changes/{change.pk}/evals/run/", follow=True).content.decode()
    assert (
        "The evals did not start: the suite&#x27;s worst case 40b is over what the team&#x27;s daily quota leaves (1b)"
        in page
    )


def test_a_plan_refused_is_shown_beside_the_button(grace, linus, monkeypatch):
    change = propose(grace)

    def refuse(**kwargs):
        raise SuiteRefused(f"{CASES}/touches-nothing/expect.yaml:1: files_changed: <b>bad</b>")

    monkeypatch.setattr(services, "suite_plan", refuse)
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "expect.yaml:1: files_changed: &lt;b&gt;bad&lt;/b&gt;" in page  # escaped


def test_a_change_of_a_recipe_without_cases_has_no_panel(work, plans):
    from catalogue.sync import recipes_sync

    recipes_sync()
    author = login(Client(), make_user("ada"))
    change = propose(author)
    assert 'id="evals"' not in author.get(f"/changes/{change.pk}/").content.decode()
    assert author.get(f"/changes/{change.pk}/evals/").status_code == 404


def test_a_case_change_shows_its_files_and_no_cost_delta(grace, linus, cased, plans):
    page = grace.post(
        "/recipes/task/report/cases/new/",
        {"case": "names-the-report", "task": "Write the report.\n", "expect": 'output_matches: ["report"]\n'},
        follow=True,
    ).content.decode()
    assert "Proposed as change request #" in page
    from reviews.models import ChangeRequest

    change = ChangeRequest.objects.latest("id")
    assert change.kind == "task" and change.name == "report"
    assert change.new_path == f"{CASES}/names-the-report/task.md"
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "no recipe cost delta" in page and "Plan and cost" not in page
    assert f"<code>{CASES}/names-the-report/expect.yaml</code>" in page
    assert f"<code>{CASES}/names-the-report/task.md</code>" in page
    assert "+output_matches: [&quot;report&quot;]" in page or "output_matches: [&quot;report&quot;]" in page
