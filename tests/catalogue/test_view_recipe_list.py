from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue.models import Recipe
from catalogue.sync import recipes_sync
from runs.models import Run
from tests.recipes_git import BROKEN, make_repo, recipe_text, work  # noqa: F401

DEMO = Path(__file__).resolve().parents[2] / "demo" / "recipes"
pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tmp_path, settings):
    """The demo recipes, committed to a fresh repository and synced."""
    repo = make_repo(tmp_path / "demo")
    for path in (DEMO / ".rysh/automations").rglob("*.md"):
        repo.write(str(path.relative_to(DEMO / ".rysh/automations")), path.read_text())
    repo.commit("Demo recipes")
    settings.RYSH_RECIPES_REPO = str(repo.path)
    recipes_sync()
    return repo


def test_it_sends_anonymous_users_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert client.get("/login/").status_code == 200


def test_it_lists_the_demo_recipes_with_their_worst_case(admin_client, demo):
    page = admin_client.get("/recipes/").content.decode()
    assert "halilagin-medium" in page and "reading-list" in page and "scout" in page
    assert 'title="4000000 tokens">1s</span> · $40.00' in page
    assert 'href="/recipes/web/scout/"' in page
    assert "never run" in page


def test_it_shows_the_last_run_state(admin_client, demo):
    recipe = Recipe.objects.get(name="scout")
    Run.objects.create(
        recipe=recipe,
        kind="web",
        name="scout",
        target="web/scout",
        recipe_path="x",
        recipe_text="x",
        provider="scripted",
        executor_model="m",
        judge_model="m",
        output_dir="o",
        state="paused",
        pause_reason="step cap",
    )
    page = admin_client.get("/recipes/").content.decode()
    assert "paused(step cap)" in page


def test_it_shows_a_broken_recipe_with_its_errors(admin_client, work):
    work.commit("Broken", tasks__bad=BROKEN)
    recipes_sync()
    page = admin_client.get("/recipes/").content.decode()
    assert "bad.md:4 loop.do.interval: expected a whole number from 1 to 500, got 900" in page


def test_it_says_when_the_newest_version_is_broken_but_the_good_one_runs(admin_client, work):
    recipes_sync()
    work.commit("Break it", tasks__report=BROKEN)
    recipes_sync()
    page = admin_client.get("/recipes/").content.decode()
    assert "newest version is invalid (1 error: report.md:4 loop.do.interval" in page
    assert "the last good version runs" in page
    assert 'title="4000000 tokens">1s</span>' in page  # the good version's worst case


def test_it_escapes_recipe_text(admin_client, work):
    work.commit("Evil", tasks__evil='---\ndescription: "<script>alert(1)</script>"\n---\nx\n')
    recipes_sync()
    page = admin_client.get("/recipes/").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_it_filters_by_kind_and_text_and_answers_htmx_with_rows_only(admin_client, demo):
    rows = admin_client.get("/recipes/?kind=web&q=scout", HTTP_HX_REQUEST="true").content.decode()
    assert "scout" in rows and "halilagin-medium" not in rows and "reading-list" not in rows
    assert "<html" not in rows
    rows = admin_client.get("/recipes/?q=MEDIUM.COM", HTTP_HX_REQUEST="true").content.decode()
    assert "halilagin-medium" in rows and "scout" not in rows  # by description, any case


def test_it_varies_on_hx_request_so_a_cache_never_serves_rows_for_the_page(admin_client, demo):
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        assert "HX-Request" in admin_client.get("/recipes/", **headers)["Vary"]


def test_it_hides_archived_recipes(admin_client, work):
    recipes_sync()
    work.commit("Remove", webs__scout=None)
    recipes_sync()
    page = admin_client.get("/recipes/").content.decode()
    assert "report" in page and "recipe-web-scout" not in page


def test_its_query_count_does_not_grow_with_the_number_of_recipes(admin_client, work):
    recipes_sync()
    with CaptureQueriesContext(connection) as few:
        admin_client.get("/recipes/")
    for n in range(40):
        work.write(f"tasks/t{n}.md", recipe_text(f"t{n}"))
    work.commit("Forty more")
    recipes_sync()
    with CaptureQueriesContext(connection) as many:
        page = admin_client.get("/recipes/").content.decode()
    assert page.count('<tr id="recipe-') == 42
    assert len(many) == len(few)


def test_the_sync_button_syncs(admin_client, work):
    response = admin_client.post("/recipes/sync/", follow=True)
    page = response.content.decode()
    assert "synced: 2 recipes, 2 changed, 0 invalid" in page
    assert Recipe.objects.count() == 2
    assert admin_client.get("/recipes/sync/").status_code == 405
