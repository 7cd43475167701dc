"""A token in RYSH_RECIPES_REPO never reaches a page, an error or the database."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.models import RepoState
from catalogue.repo import GitRepo, RepoError, redact
from catalogue.sync import recipes_sync
from tests.recipes_git import remote  # noqa: F401

UNREACHABLE = "http://user:tok3n@127.0.0.1:9/x.git"  # nothing listens on the discard port


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://user:ghp_secret@github.example/org/recipes.git", "https://***@github.example/org/recipes.git"),
        ("https://ghp_secret@github.example/r.git", "https://***@github.example/r.git"),
        ("https://u:p@ss@host/r.git", "https://***@host/r.git"),
        (
            "fatal: unable to access 'http://user:tok3n@127.0.0.1:9/x.git/': Failed",
            "fatal: unable to access 'http://***@127.0.0.1:9/x.git/': Failed",
        ),
        ("https://github.example/org/recipes.git", "https://github.example/org/recipes.git"),
        ("git@github.example:org/recipes.git", "git@github.example:org/recipes.git"),
        ("/srv/recipes", "/srv/recipes"),
        ("see https://host/a@b and mail me@example.com", "see https://host/a@b and mail me@example.com"),
    ],
)
def test_it_redacts_the_userinfo_of_urls(text, shown):
    assert redact(text) == shown


def test_it_scrubs_the_token_from_what_git_echoes_in_other_forms(tmp_path):
    repo = GitRepo(location="https://user:s%40cret99@host/r.git", git_dir=tmp_path, remote=True)
    said = repo._scrub("remote: bad password s@cret99 (s%40cret99) for user")
    assert "cret99" not in said and "user" in said


@pytest.mark.django_db
def test_a_failed_sync_does_not_show_the_token(settings, tmp_path):
    settings.RYSH_RECIPES_REPO = UNREACHABLE
    settings.DATA_DIR = tmp_path / "data"
    with pytest.raises(RepoError) as failed:
        recipes_sync()
    assert "tok3n" not in str(failed.value)
    assert "127.0.0.1" in str(failed.value)  # still says where it failed
    with pytest.raises(CommandError) as command_failed:
        call_command("sync_recipes")
    assert "tok3n" not in str(command_failed.value)


@pytest.mark.django_db
def test_the_sync_button_does_not_show_the_token(admin_client, settings, tmp_path):
    settings.RYSH_RECIPES_REPO = UNREACHABLE
    settings.DATA_DIR = tmp_path / "data"
    page = admin_client.post("/recipes/sync/", follow=True).content.decode()
    assert "sync failed" in page
    assert "tok3n" not in page


@pytest.mark.django_db
def test_the_recipe_list_never_shows_the_token(admin_client, settings):
    settings.RYSH_RECIPES_REPO = UNREACHABLE
    page = admin_client.get("/recipes/").content.decode()
    assert "tok3n" not in page
    assert "http://***@127.0.0.1:9/x.git" in page


@pytest.mark.django_db
def test_the_sync_state_is_kept_without_the_token(remote, monkeypatch):
    import catalogue.sync as sync

    # the tokened URL stands for the file:// remote (no server here takes a token)
    real_open = sync.open_repo
    monkeypatch.setattr(sync, "open_repo", lambda location: real_open(f"file://{remote.bare}"))
    recipes_sync(repo=UNREACHABLE)
    assert RepoState.objects.get().repo == "http://***@127.0.0.1:9/x.git"
