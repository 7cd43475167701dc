"""End to end in review, on the real anthropic SDK against the fake Messages server: a coding
recipe with two cases (good passes; bad's run also rewrites test_calc.py, outside its
files_changed) runs as suites on a change request and on main from the panel's button; the
panel shows each side's pass/fail and cost; with RYSH_REVIEW_REQUIRE_EVALS on the merge is
refused naming bad, and allowed once the change fixes bad's expect.yaml and the suite runs again.
No suite spends a token over its ceiling."""

from __future__ import annotations

import re

import pytest
from django.db.models import Sum
from django.test import Client

from evals.local import suite_drive_here
from evals.models import CaseState
from evals.selectors import suites_for_change
from reviews.models import ChangeRequest
from reviews.services import change_request_open_files
from runs.models import LedgerEntry
from tests.evals.suites_setup import FOLDER, recipes, script  # noqa: F401
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import login, make_user

pytestmark = pytest.mark.django_db(transaction=True)
BAD_EXPECT = f"{FOLDER}/fix/evals/bad/expect.yaml"
STRICT = 'files_changed: ["calc.py"]\ncommands_forbidden: ["rm *", "git push*"]\noutput_matches: ["(?i)fixed"]\n'
FIXED = 'files_changed: ["calc.py", "test_calc.py"]\ncommands_forbidden: ["rm *", "git push*"]\noutput_matches: ["(?i)fixed"]\n'


def run_both(client, change) -> dict:
    """Press the panel's button, let the suites run here, and return them by side."""
    page = client.post(f"/changes/{change.pk}/evals/run/", follow=True).content.decode()
    assert "Evals started" in page, page[:2000]
    suites = suites_for_change(change)
    return {side: suite_drive_here(suite) for side, suite in suites.items()}


def assert_within_ceiling(suite) -> None:
    spent = LedgerEntry.objects.filter(run__in=[c.run_id for c in suite.cases.all()]).aggregate(
        t=Sum("counted_tokens")
    )["t"]
    assert spent == suite.tokens_counted <= suite.budget_tokens


def test_the_panel_and_the_gate_on_the_real_sdk(fake_anthropic, recipes, settings):
    script(fake_anthropic)
    settings.RYSH_REVIEW_REQUIRE_EVALS = True
    grace, linus = make_user("grace"), make_user("linus")
    reviewer = login(Client(), linus)
    change = change_request_open_files(
        user=grace, kind="task", name="fix", path=BAD_EXPECT, files={BAD_EXPECT: STRICT}, message="bad: no rm, no push"
    )
    page = reviewer.get(f"/changes/{change.pk}/").content.decode()
    assert "no eval suite has run on this change yet" in page and "Run evals (main and change)" in page

    suites = run_both(reviewer, change)
    for side, suite in suites.items():
        states = dict(suite.cases.values_list("name", "state"))
        assert states == {"good": CaseState.PASSED, "bad": CaseState.FAILED}, (side, states)
        assert_within_ceiling(suite)
        assert suite.cost is not None and suite.cost > 0
    page = reviewer.get(f"/changes/{change.pk}/").content.decode()
    row = re.search(r'id="eval-row-bad".*?</tr>', page, re.S).group(0)
    assert row.count("eval-failed") == 2 and "test_calc.py" in row and row.count("$") == 2
    assert "1/2 passed (50%)" in page and "Δ pass rate 0%" in page

    refused = reviewer.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True)
    text = refused.content.decode()
    assert "Not merged: case bad failed (files_changed:" in text and "test_calc.py" in text
    assert ChangeRequest.objects.get(pk=change.pk).state == "open"

    # the author lets bad's run change the test too; the old suite no longer counts
    author = login(Client(), grace)
    author.post(f"/changes/{change.pk}/case/", {"text": FIXED, "message": "bad may change the test"})
    change.refresh_from_db()
    blocked = reviewer.get(f"/changes/{change.pk}/").content.decode()
    assert "run the evals again" in blocked

    suites = run_both(reviewer, change)
    assert dict(suites["change"].cases.values_list("name", "state")) == {"good": "passed", "bad": "passed"}
    assert dict(suites["main"].cases.values_list("name", "state")) == {"good": "passed", "bad": "failed"}
    for suite in suites.values():
        assert_within_ceiling(suite)
    page = reviewer.get(f"/changes/{change.pk}/").content.decode()
    assert "Δ pass rate +50%" in page and 'id="merge-blockers"' not in page
    merged = reviewer.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True)
    assert "Merged into main" in merged.content.decode()
