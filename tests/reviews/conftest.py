"""Two people signed in to the dashboard over a synced recipes repository (grace proposes,
linus reviews), and a change request grace opens from the editor."""

import pytest
from django.test import Client

from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401


@pytest.fixture
def grace(work):
    recipes_sync()
    return login(Client(), make_user("grace"))


@pytest.fixture
def linus(work):
    return login(Client(), make_user("linus"))


def propose(client, text=None, message="Bigger budget"):
    client.post(
        "/recipes/task/report/edit/",
        {"text": text or recipe_text("bigger", size="5b", total="25b"), "message": message},
    )
    return ChangeRequest.objects.latest("id")
