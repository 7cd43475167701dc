"""RYSH_REVIEW_REQUIRE_EVALS: approving a change that touches a recipe with cases is refused until
the newest suite on the change ran on its head and every case passed; the refusal and the change
page name what blocks it. Off (the default), nothing changes. Revisions and auto suites."""

from __future__ import annotations

import pytest

from evals import services
from evals.selectors import merge_blockers
from reviews.models import ChangeRequest
from reviews.services import MERGE_CHECKS, ReviewError, change_request_approve
from tests.evals.review_helpers import FAILED_FILES, cased, grace, linus, plans, propose, record_suite  # noqa: F401
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def gate(settings, plans):
    settings.RYSH_REVIEW_REQUIRE_EVALS = True


def test_the_gate_is_plugged_in_by_the_evals_app():
    assert merge_blockers in MERGE_CHECKS


def test_off_by_default_a_change_merges_without_suites(grace, linus):
    change = propose(grace)
    assert merge_blockers(change) == []
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Merged into main" in page


def test_no_suite_then_a_failing_case_then_passing(grace, linus, gate):
    change = propose(grace)
    assert merge_blockers(change) == ["no eval suite has run on this change yet: run the evals"]
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert 'id="merge-blockers"' in page and "no eval suite has run on this change yet" in page
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Not merged: no eval suite has run on this change yet" in page
    change.refresh_from_db()
    assert change.state == "open"

    record_suite(change, "change", {"writes-report": ("passed", 10, None, []), "touches-nothing": FAILED_FILES})
    with pytest.raises(ReviewError) as refused:
        change_request_approve(change=change, user=linus_user(), seen_head=change.head_sha)
    assert "case touches-nothing failed (files_changed: report.md is outside files_changed ([]))" in str(refused.value)
    assert "writes-report" not in str(refused.value)

    record_suite(
        change, "change", {"writes-report": ("passed", 10, None, []), "touches-nothing": ("passed", 5, None, [])}
    )
    assert merge_blockers(change) == []
    done = change_request_approve(change=change, user=linus_user(), seen_head=change.head_sha)
    assert done.state == "merged"


def linus_user():
    from django.contrib.auth.models import User

    return User.objects.get(username="linus")


def test_a_suite_on_an_older_revision_or_still_running_blocks(grace, linus, gate):
    change = propose(grace)
    record_suite(change, "change", {"writes-report": ("passed", 10, None, [])}, sha="0" * 40)
    (reason,) = merge_blockers(change)
    assert "not on the change's head" in reason and change.head_sha[:10] in reason
    record_suite(change, "change", {"writes-report": ("grading", 10, None, [])}, state="running")
    assert merge_blockers(change) == [f"suite #{change.suites.first().pk} is still running: writes-report"]


def test_errors_broken_cases_and_a_ceiling_block_by_name(grace, linus, gate):
    change = propose(grace)
    record_suite(
        change,
        "change",
        {"a": ("error", 0, None, []), "b": ("broken", 0, None, []), "c": ("pending", 0, None, [])},
        state="ceiling",
    )
    blockers = merge_blockers(change)
    assert [b.split(" (")[0] for b in blockers] == ["case a errored", "case b is broken", "case c errored"]


def test_a_main_suite_alone_does_not_count(grace, linus, gate):
    change = propose(grace)
    record_suite(change, "main", {"writes-report": ("passed", 10, None, [])})
    assert merge_blockers(change) == ["no eval suite has run on this change yet: run the evals"]


def test_a_recipe_without_cases_is_not_gated(work, gate):
    from django.test import Client

    from catalogue.sync import recipes_sync

    recipes_sync()
    change = propose(login(Client(), make_user("ada")))
    assert merge_blockers(change) == []


def test_auto_evals_start_both_suites_when_a_change_opens_or_is_revised(
    grace, settings, monkeypatch, django_capture_on_commit_callbacks
):
    started = []
    monkeypatch.setattr(
        services, "change_suites_start", lambda *, change, user, provider=None: started.append(change.head_sha)
    )
    with django_capture_on_commit_callbacks(execute=True):
        change = propose(grace)
    assert started == []  # off by default
    settings.RYSH_REVIEW_AUTO_EVALS = True
    with django_capture_on_commit_callbacks(execute=True):
        change = propose(grace, text=recipe_text("other", size="6b", total="30b"), message="Other")
    assert started == [change.head_sha]
    with django_capture_on_commit_callbacks(execute=True):
        grace.post(
            f"/changes/{change.pk}/edit/", {"text": recipe_text("again", size="7b", total="35b"), "message": "Again"}
        )
    change.refresh_from_db()
    assert started[-1] == change.head_sha and len(started) == 2


def test_auto_evals_refused_say_so_in_the_thread(grace, settings, monkeypatch, django_capture_on_commit_callbacks):
    def refuse(**kwargs):
        raise services.SuiteRefused("over the quota by 3b")

    monkeypatch.setattr(services, "change_suites_start", refuse)
    settings.RYSH_REVIEW_AUTO_EVALS = True
    with django_capture_on_commit_callbacks(execute=True):
        change = propose(grace)
    assert ChangeRequest.objects.get(pk=change.pk).comments.filter(body__contains="over the quota by 3b").exists()
