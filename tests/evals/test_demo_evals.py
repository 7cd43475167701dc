"""The offline demo's evals: seed_demo gives fix-the-test two cases and a change request; on the
scripted model the suites on main and on the change differ as the demo says: on main
keeps-to-the-tests fails naming calc.py (the script's run fixes the code), on the change (which
corrects its expect.yaml) both cases pass; the panel shows it, and the merge gate follows it."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.test import Client

from evals.local import suite_drive_here
from evals.models import CaseState
from evals.selectors import merge_blockers
from evals.services import change_suites_start
from reviews.models import ChangeRequest
from tests.recipes_git import login

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(settings, tmp_path):
    settings.DEMO_RECIPES_REPO = settings.RYSH_RECIPES_REPO = str(tmp_path / "demo-recipes")
    settings.RYSH_RECIPES_BRANCH = "main"
    settings.DATA_DIR = tmp_path
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    settings.AXES_ENABLED = False
    call_command("seed_demo")
    return tmp_path


def test_seed_demo_makes_the_cases_and_the_change_request_once(demo):
    from evals.planning import read_target

    cases = read_target("task/fix-the-test", side="main").cases
    assert [(c.name, c.broken) for c in cases] == [("fixes-mean", False), ("keeps-to-the-tests", False)]
    change = ChangeRequest.objects.get()
    assert (change.kind, change.name, change.author.username) == ("task", "fix-the-test", "reviewer")
    assert change.new_path.endswith("fix-the-test/evals/keeps-to-the-tests/expect.yaml")
    call_command("seed_demo")
    assert ChangeRequest.objects.count() == 1


def test_the_demo_suites_show_the_difference(demo, settings):
    from django.contrib.auth import get_user_model

    change = ChangeRequest.objects.get()
    admin = get_user_model().objects.get(username="demo")
    main, mine = change_suites_start(change=change, user=admin, provider="scripted")
    main, mine = suite_drive_here(main), suite_drive_here(mine)
    got = {s.side: {c.name: c for c in s.cases.all()} for s in (main, mine)}
    assert got["main"]["fixes-mean"].state == CaseState.PASSED
    failed = got["main"]["keeps-to-the-tests"]
    assert failed.state == CaseState.FAILED
    assert [f["assertion"] for f in failed.failures] == ["files_changed"]
    assert "calc.py" in failed.failures[0]["message"]
    assert {c.state for c in got["change"].values()} == {CaseState.PASSED}
    assert mine.commit_sha == change.head_sha and main.commit_sha == change.base_sha
    for suite in (main, mine):  # the ceiling held: nothing counted past it
        assert suite.tokens_counted <= suite.budget_tokens

    page = login(Client(), admin).get(f"/changes/{change.pk}/").content.decode()
    row = re.search(r'id="eval-row-keeps-to-the-tests".*?</tr>', page, re.S).group(0)
    assert 'class="eval-main"><span class="eval eval-failed">failed' in row
    assert 'class="eval-change"><span class="eval eval-passed">passed' in row
    assert "main:</span> files_changed:" in row and "calc.py" in row and "free (offline)" in row
    assert "1/2 passed (50%)" in page and "2/2 passed (100%)" in page and "Δ pass rate +50%" in page
    assert "no recipe cost delta" in page

    settings.RYSH_REVIEW_REQUIRE_EVALS = True
    assert merge_blockers(change) == []  # the change's own suite passed on its head
