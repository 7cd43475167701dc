"""A change request that brings a `.rysh/policy.yaml` that does not parse shows its errors at
their lines in review and cannot merge (docs/policy.md); a valid one merges."""

import pytest
from django.test import Client

from catalogue.sync import recipes_sync
from policies.review_checks import policy_merge_blockers
from reviews.services import MERGE_CHECKS, ReviewError, change_request_approve, change_request_open_files
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

RECIPE = ".rysh/automations/tasks/report.md"


def open_change(user, policy: str):
    return change_request_open_files(
        user=user,
        kind="task",
        name="report",
        path=RECIPE,
        files={RECIPE: recipe_text("with a policy"), ".rysh/policy.yaml": policy},
        message="A policy for the team",
    )


def test_a_broken_policy_in_a_change_is_a_check_error_and_blocks_the_merge(work):
    recipes_sync()
    grace, linus = make_user("grace"), make_user("linus")
    assert policy_merge_blockers in MERGE_CHECKS
    change = open_change(grace, "bash:\n  deny: ['rm -rf:*']\nbudget:\n  ceilings:\n    pass: lots\n")
    blockers = policy_merge_blockers(change)
    assert len(blockers) == 1 and blockers[0].startswith(".rysh/policy.yaml:5 budget.ceilings.pass: expected")
    page = login(Client(), linus).get(f"/changes/{change.pk}/").content.decode()
    assert 'id="merge-blockers"' in page and ".rysh/policy.yaml:5 budget.ceilings.pass" in page
    with pytest.raises(ReviewError, match=r"policy.yaml:5 budget.ceilings.pass"):
        change_request_approve(change=change, user=linus, seen_head=change.head_sha)


def test_a_valid_policy_in_a_change_merges(work):
    recipes_sync()
    grace, linus = make_user("grace"), make_user("linus")
    change = open_change(grace, "bash:\n  deny: ['rm -rf:*']\n")
    assert policy_merge_blockers(change) == []
    assert change_request_approve(change=change, user=linus, seen_head=change.head_sha).state == "merged"
