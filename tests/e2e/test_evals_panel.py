"""The Evals panel in real Chromium: the admin runs the demo change request's suites (seed_demo
opens it) on the scripted model; the panel refreshes itself while they run, then shows main
failing keeps-to-the-tests naming calc.py and the change passing both cases (docs/evals.md)."""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_dashboard import wait_text

pytestmark = pytest.mark.e2e


def test_the_panel_runs_both_suites_and_refreshes_itself(stack, as_user):
    page = as_user("demo")
    page.goto(f"{stack.url}/changes/?state=all")
    page.click("text=Eval case keeps-to-the-tests")
    page.wait_for_url(re.compile(r"/changes/\d+/$"))
    assert "Worst case of both suites" in page.inner_text("#evals-run")
    page.click("#evals-run button[type=submit]")
    page.wait_for_url(re.compile(r"/changes/\d+/#evals$"))
    # no reload from here: htmx polls the fragment until nothing runs
    page.wait_for_selector("#evals-running", state="detached", timeout=180_000)
    wait_text(page, "#eval-row-keeps-to-the-tests .eval-main", "^failed")
    assert page.inner_text("#eval-row-keeps-to-the-tests .eval-change").startswith("passed")
    assert "calc.py" in page.inner_text("#eval-row-keeps-to-the-tests .what-failed")
    assert page.inner_text("#eval-row-fixes-mean .eval-main").startswith("passed")
    totals = page.inner_text("#evals .evals-totals")
    assert "1/2 passed (50%)" in totals and "2/2 passed (100%)" in totals

    viewer = as_user("viewer")
    viewer.goto(page.url)
    assert viewer.locator("#evals-run").count() == 0 and viewer.locator("#eval-row-fixes-mean").count() == 1
