from decimal import Decimal

import pytest
from django.test import Client

from budgets.units import BOOK
from catalogue.models import Recipe
from spend.services import quota_set
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401
from tests.reviews.conftest import propose

pytestmark = pytest.mark.django_db
HOSTILE = "<script>alert(1)</script>"


def test_the_whole_loop_edit_review_approve_history(grace, linus, work):
    """A user edits, sees the change request with the cost delta; another approves; the new
    version is in the history."""
    change = propose(grace)
    page = grace.get(f"/changes/{change.pk}/").content.decode()
    assert "worst case 1s → 25b, +$10.00" in page
    assert '<tr class="diff-add">' in page and "+      size: 5b" in page
    assert "You cannot approve your own change" in page
    assert "Approve and merge" not in page
    assert grace.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}).status_code == 403

    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "Approve and merge" in page
    assert f'<input type="hidden" name="head" value="{change.head_sha}">' in page
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Merged into main and synced." in page
    change.refresh_from_db()
    assert change.state == "merged" and work.head() == change.merged_sha

    page = linus.get("/recipes/task/report/").content.decode()
    assert "Bigger budget" in page and "grace" in page
    assert Recipe.objects.get(name="report").good.plan["worst_display"] == "25b"


def test_a_viewer_reads_but_cannot_review(grace, work):
    change = propose(grace)
    viewer = login(Client(), make_user("vera", role="viewer"))
    page = viewer.get(f"/changes/{change.pk}/").content.decode()
    assert "Approve and merge" not in page and "Request changes" not in page
    assert viewer.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}).status_code == 403
    assert viewer.post(f"/changes/{change.pk}/request-changes/").status_code == 403
    assert viewer.post(f"/changes/{change.pk}/close/").status_code == 403
    assert viewer.get(f"/changes/{change.pk}/edit/").status_code == 403
    # commenting needs the review role too (see tests/reviews/test_review_security.py)
    assert viewer.post(f"/changes/{change.pk}/comment/", {"body": "Looks fine to me"}).status_code == 403
    assert "Looks fine to me" not in viewer.get(f"/changes/{change.pk}/").content.decode()
    change.refresh_from_db()
    assert change.state == "open"


def test_request_changes_and_revise(grace, linus):
    change = propose(grace)
    linus.post(f"/changes/{change.pk}/request-changes/", {"body": "Keep it at 4b"})
    page = grace.get(f"/changes/{change.pk}/").content.decode()
    assert "requested changes" in page and "Keep it at 4b" in page
    assert f'href="/changes/{change.pk}/edit/"' in page
    assert linus.get(f"/changes/{change.pk}/edit/").status_code == 403
    page = grace.get(f"/changes/{change.pk}/edit/").content.decode()
    assert "size: 5b" in page
    grace.post(
        f"/changes/{change.pk}/edit/", {"text": recipe_text("small", size="3b", total="15b"), "message": "Smaller"}
    )
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "worst case 1s → 15b, −$10.00" in page and "revised the change" in page


def test_a_conflict_says_so_and_the_author_resolves_it(grace, linus, work):
    change = propose(grace)
    work.commit("Edited elsewhere", tasks__report=recipe_text("elsewhere"))
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Conflict: not merged" in page
    assert "<li><code>.rysh/automations/tasks/report.md</code></li>" in page
    assert "Nothing was lost" in page
    page = grace.get(f"/changes/{change.pk}/edit/").content.decode()
    assert "main has changed this file since the change was made" in page
    assert "-description: elsewhere" in page  # main now → your text
    grace.post(f"/changes/{change.pk}/edit/", {"text": recipe_text("merged by hand"), "message": "Resolve"})
    change.refresh_from_db()
    linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha})
    change.refresh_from_db()
    assert change.state == "merged"
    assert Recipe.objects.get(name="report").latest.spec["description"] == "merged by hand"


def test_the_list_of_change_requests(grace, linus):
    change = propose(grace)
    page = linus.get("/changes/").content.decode()
    assert f'href="/changes/{change.pk}/"' in page and "Bigger budget" in page
    grace.post(f"/changes/{change.pk}/close/")
    assert "Bigger budget" not in linus.get("/changes/").content.decode()
    assert "Bigger budget" in linus.get("/changes/?state=closed").content.decode()


def test_it_escapes_titles_comments_and_text(grace, linus):
    change = propose(grace, text=recipe_text(HOSTILE), message=f"Title {HOSTILE}")
    linus.post(f"/changes/{change.pk}/comment/", {"body": f"Comment {HOSTILE}"})
    for client, url in (
        (linus, f"/changes/{change.pk}/"),
        (linus, "/changes/"),
        (grace, f"/changes/{change.pk}/edit/"),
    ):
        page = client.get(url).content.decode()
        assert HOSTILE not in page, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, url


def test_posts_need_post_and_csrf(grace, work):
    change = propose(grace)
    assert grace.get(f"/changes/{change.pk}/approve/").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(change.author)
    assert strict.post(f"/changes/{change.pk}/comment/", {"body": "x"}).status_code == 403
    assert strict.post("/recipes/validate/", {"text": "x"}).status_code == 403


def test_a_scheduled_recipes_cost_delta_shows_its_runs_per_window_against_the_quotas(grace):
    page = grace.get(f"/changes/{propose(grace).pk}/").content.decode()
    assert 'id="schedule-outlook"' not in page  # no schedule: nothing to weigh
    quota_set(scope="installation", window="day", tokens=25 * BOOK, dollars=None)
    quota_set(scope="recipe", target="task/report", window="month", tokens=None, dollars=Decimal(10_000))
    scheduled = recipe_text("bigger", size="5b", total="25b").replace("loop:", 'schedule: "@every 30m"\nloop:', 1)
    change = propose(grace, text=scheduled, message="Every half hour")
    page = grace.get(f"/changes/{change.pk}/").content.decode()
    assert 'id="schedule-outlook"' in page
    assert (
        "scheduled 48 times a day × worst case 25b = 60s tokens a day; today&#x27;s installation quota is 25b tokens"
        " — runs will pause"
    ) in page
    assert "× worst case $50.00 = $" in page and "quota of recipe task/report is $10,000.00 — " in page


def test_a_change_to_a_model_of_the_other_generation_says_the_count_changes(grace):
    text = recipe_text().replace("---\ndescription", "---\nmodel: claude-opus-4-6\ndescription", 1)
    change = propose(grace, text=text, message="Pin an older Opus")
    page = grace.get(f"/changes/{change.pk}/").content.decode()
    assert (
        "the model changes generation, claude-sonnet-5-5 (5.x) to claude-opus-4-6 (4.x): the older tokenizer counts "
        "fewer tokens"
    ) in page
    assert "tokenizer-note" not in grace.get(f"/changes/{propose(grace).pk}/").content.decode()
