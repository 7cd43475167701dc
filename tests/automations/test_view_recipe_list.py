from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "demo" / "recipes"


@pytest.fixture
def repo(settings, tmp_path):
    settings.RYSH_RECIPES_REPO = str(tmp_path)
    (tmp_path / ".rysh/automations/webs").mkdir(parents=True)
    (tmp_path / ".rysh/automations/tasks").mkdir(parents=True)
    return tmp_path


def write(repo, rel, text):
    (repo / ".rysh/automations" / rel).write_text(text)


def test_it_sends_anonymous_users_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert client.get("/login/").status_code == 200


@pytest.mark.django_db
def test_it_lists_the_demo_recipes_with_their_worst_case(admin_client, settings):
    settings.RYSH_RECIPES_REPO = str(DEMO)
    page = admin_client.get("/recipes/").content.decode()
    assert "halilagin-medium" in page and "reading-list" in page and "scout" in page
    assert 'title="4000000 tokens">1s</span> · $60.00' in page


@pytest.mark.django_db
def test_it_shows_a_broken_recipe_with_its_errors(admin_client, repo):
    write(repo, "tasks/bad.md", "---\nloop:\n  do:\n    interval: 900\n---\nx\n")
    page = admin_client.get("/recipes/").content.decode()
    assert "bad.md:4 loop.do.interval: expected a whole number from 1 to 500, got 900" in page


@pytest.mark.django_db
def test_it_escapes_recipe_text(admin_client, repo):
    write(repo, "tasks/evil.md", '---\ndescription: "<script>alert(1)</script>"\n---\nx\n')
    page = admin_client.get("/recipes/").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.django_db
def test_it_filters_by_kind_and_text_and_answers_htmx_with_rows_only(admin_client, settings):
    settings.RYSH_RECIPES_REPO = str(DEMO)
    rows = admin_client.get("/recipes/?kind=web&q=scout", HTTP_HX_REQUEST="true").content.decode()
    assert "scout" in rows and "halilagin-medium" not in rows and "reading-list" not in rows
    assert "<html" not in rows
