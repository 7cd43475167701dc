"""Only operators, editors and admins may sync the catalogue, and only they see the button."""

import pytest

from catalogue.models import Recipe
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db
BUTTON = 'action="/recipes/sync/"'


@pytest.mark.parametrize("role", ["viewer", None])
def test_it_refuses_viewers_and_users_without_a_role(client, work, role):
    login(client, make_user("vera", role=role))
    assert client.post("/recipes/sync/").status_code == 403
    assert Recipe.objects.count() == 0
    assert BUTTON not in client.get("/recipes/").content.decode()


@pytest.mark.parametrize("role", ["operator", "editor", "admin"])
def test_it_lets_operators_editors_and_admins_sync(client, work, role):
    login(client, make_user("olga", role=role))
    assert BUTTON in client.get("/recipes/").content.decode()
    page = client.post("/recipes/sync/", follow=True).content.decode()
    assert "synced: 2 recipes, 2 changed, 0 invalid" in page
    assert Recipe.objects.count() == 2


def test_it_sends_anonymous_users_to_the_login_page(client, work):
    response = client.post("/recipes/sync/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
