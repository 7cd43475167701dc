"""The security review's findings on change requests: approving only the revision the reviewer
saw, stale approvals, who may approve, comment and close, and the cost of a diff."""

import difflib

import pytest
from django.core.exceptions import PermissionDenied
from django.template.loader import render_to_string
from django.test import Client

from catalogue.sync import recipes_sync
from reviews import services
from reviews.models import ChangeRequest, ReviewComment
from reviews.selectors import change_request_approvals
from reviews.services import (
    ReviewError,
    change_request_approve,
    change_request_open,
    change_request_update,
    text_diff,
)
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401
from tests.reviews.conftest import propose

pytestmark = pytest.mark.django_db


def revise(client, change, description="smaller"):
    client.post(f"/changes/{change.pk}/edit/", {"text": recipe_text(description, size="3b"), "message": "Revise"})
    change.refresh_from_db()
    return change


# --- 1. approving merges only what the reviewer saw ----------------------------------------------


def test_it_puts_the_head_the_reviewer_sees_in_the_approve_form(grace, linus):
    change = propose(grace)
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert f'<input type="hidden" name="head" value="{change.head_sha}">' in page


def test_it_refuses_to_approve_when_the_author_revised_after_the_page_loaded(grace, linus, work):
    change = propose(grace)
    seen = change.head_sha
    main = work.head()
    change = revise(grace, change)
    assert change.head_sha != seen
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": seen}, follow=True).content.decode()
    assert "the change was revised after you loaded it" in page
    assert "Read the new diff, then approve again." in page
    change.refresh_from_db()
    assert change.state == "open" and work.head() == main
    assert not change.comments.filter(verdict="approve").exists()


def test_it_refuses_an_approve_that_names_no_head(grace, linus, work):
    change = propose(grace)
    main = work.head()
    page = linus.post(f"/changes/{change.pk}/approve/", follow=True).content.decode()
    assert "revised after you loaded it" in page
    change.refresh_from_db()
    assert change.state == "open" and work.head() == main


def test_it_approves_the_head_the_reviewer_saw(grace, linus, work):
    change = revise(grace, propose(grace))
    linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha})
    change.refresh_from_db()
    assert change.state == "merged" and work.head() == change.merged_sha


def test_a_revision_makes_earlier_approvals_stale(grace, linus, work):
    change = propose(grace)
    work.commit("Edited elsewhere", tasks__report=recipe_text("elsewhere"))
    linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha})
    change.refresh_from_db()
    assert change.state == "conflict"
    assert [c.author.username for c in change_request_approvals(change)] == ["linus"]

    change = revise(grace, change, "merged by hand")
    assert list(change_request_approvals(change)) == []
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "(an earlier revision; stale)" in page


def test_whoever_revised_a_request_cannot_approve_it(grace, work):
    change = propose(grace)
    admin = make_user("ada", role="admin")
    ada = login(Client(), admin)
    change = revise(ada, change)
    assert change.comments.filter(verdict="update", author=admin).exists()
    page = ada.get(f"/changes/{change.pk}/").content.decode()
    assert "Approve and merge" not in page and "You revised this change" in page
    assert ada.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}).status_code == 403
    with pytest.raises(PermissionDenied, match="you revised"):
        change_request_approve(change=change, user=admin, seen_head=change.head_sha)
    change.refresh_from_db()
    assert change.state == "open"


def test_a_revision_does_not_reopen_a_request_merged_meanwhile(work):
    recipes_sync()
    author, reviewer = make_user("grace"), make_user("linus")
    change = change_request_open(user=author, kind="task", name="report", text=recipe_text("first"))
    stale = ChangeRequest.objects.get(pk=change.pk)  # the author's editor, loaded before the merge
    change_request_approve(change=change, user=reviewer, seen_head=change.head_sha)
    with pytest.raises(ReviewError):
        change_request_update(change=stale, user=author, text=recipe_text("second"))
    change.refresh_from_db()
    assert change.state == "merged"
    assert not ReviewComment.objects.filter(change_request=change, verdict="update").exists()


# --- 2. the cost of a diff ------------------------------------------------------------------------


@pytest.fixture
def matchers(monkeypatch):
    """The sequences every SequenceMatcher built by text_diff compares."""
    built = []

    class Counting(difflib.SequenceMatcher):
        def __init__(self, isjunk=None, a="", b="", autojunk=True):
            built.append((len(a), len(b)))
            super().__init__(isjunk, a, b, autojunk)

    monkeypatch.setattr(services.difflib, "SequenceMatcher", Counting)
    services._diff_cache.clear()
    return built


def lines(n, changed=(), prefix="line"):
    return "".join(f"{'changed' if i in changed else prefix} {i}\n" for i in range(n))


def test_a_small_edit_of_a_5000_line_file_compares_only_the_middle(matchers):
    rows = text_diff(lines(5000), lines(5000, changed={2500}))
    assert len(matchers) == 1 and max(matchers[0]) <= 10
    assert rows[0].text == "@@ -2498,7 +2498,7 @@"
    assert [(r.kind, r.text, r.old, r.new) for r in rows if r.kind in ("add", "del")] == [
        ("del", "line 2500", 2501, None),
        ("add", "changed 2500", None, 2501),
    ]


def test_a_5000_line_rewrite_is_too_large_to_show_and_is_not_diffed(matchers):
    rows = text_diff(lines(5000), lines(5000, prefix="other"))
    assert matchers == []
    assert [r.kind for r in rows] == ["skip"]
    html = render_to_string("catalogue/shared/_text_diff.html", {"diff": rows})
    assert "The diff is too large to show" in html and 'class="diff-skip"' in html


def test_the_same_diff_twice_is_computed_once(matchers):
    first = text_diff(lines(300), lines(300, changed={3, 150}))
    second = text_diff(lines(300), lines(300, changed={3, 150}))
    assert first == second and len(matchers) == 1
    text_diff(lines(300), lines(300, changed={4}))
    assert len(matchers) == 2


def test_the_diff_cache_is_bounded(matchers):
    for i in range(services.DIFF_CACHE_SIZE + 10):
        text_diff("a\n", f"b {i}\n")
    assert len(services._diff_cache) == services.DIFF_CACHE_SIZE


# --- 3. who may comment and close -----------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", None])
def test_it_refuses_comments_from_viewers_and_users_without_a_role(grace, role):
    change = propose(grace)
    reader = login(Client(), make_user("vera", role=role))
    page = reader.get(f"/changes/{change.pk}/").content.decode()
    assert f'action="/changes/{change.pk}/comment/"' not in page
    assert reader.post(f"/changes/{change.pk}/comment/", {"body": "Sneaky"}).status_code == 403
    assert not change.comments.filter(body="Sneaky").exists()


def test_a_reviewer_still_comments(grace, linus):
    change = propose(grace)
    assert f'action="/changes/{change.pk}/comment/"' in linus.get(f"/changes/{change.pk}/").content.decode()
    linus.post(f"/changes/{change.pk}/comment/", {"body": "Looks fine"})
    assert change.comments.filter(body="Looks fine").exists()


def test_an_author_demoted_to_viewer_cannot_close_their_request(grace):
    change = propose(grace)
    author = change.author
    author.groups.clear()
    author.groups.add(make_group("viewer"))
    page = grace.get(f"/changes/{change.pk}/").content.decode()
    assert "Close without merging" not in page
    assert grace.post(f"/changes/{change.pk}/close/").status_code == 403
    change.refresh_from_db()
    assert change.state == "open"


def make_group(name):
    from django.contrib.auth.models import Group

    return Group.objects.get_or_create(name=name)[0]


def test_it_merges_the_claimed_head_even_from_an_older_object(work):
    recipes_sync()
    author, reviewer = make_user("grace"), make_user("linus")
    change = change_request_open(user=author, kind="task", name="report", text=recipe_text("first"))
    old = ChangeRequest.objects.get(pk=change.pk)
    change = change_request_update(change=change, user=author, text=recipe_text("second"))
    merged = change_request_approve(change=old, user=reviewer, seen_head=change.head_sha)
    assert merged.state == "merged" and work.head() == change.head_sha
