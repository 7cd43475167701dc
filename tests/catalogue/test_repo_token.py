"""A token in RYSH_RECIPES_REPO never reaches git's argv (readable by any local user in /proc
while git runs), the mirror's config or the database; git still authenticates — clone, fetch
and push — through a credential helper that reads it from git's own environment (docs/recipes-in-git.md). Proven against a local git smart-HTTP server that wants a Basic login."""

import importlib
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command

from catalogue.repo import RepoError, open_repo, redact, reopen_location, split_credential
from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from reviews.services import change_request_approve, change_request_open
from tests.fakes.git_http import GitHTTP
from tests.recipes_git import git, make_repo, make_user, recipe_text

pytestmark = pytest.mark.django_db
SECRET = "ghp_Tok3nThatMustNotLeak"


@pytest.fixture
def server(tmp_path):
    seed = make_repo(tmp_path / "seed", tasks__report=recipe_text(), webs__scout=recipe_text("Scout the web"))
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(tmp_path / "served/recipes.git")], check=True)
    with GitHTTP(tmp_path / "served", username="alice", password=SECRET) as running:
        yield running


@pytest.fixture
def tokened(server, settings, tmp_path):
    """RYSH_RECIPES_REPO with the token in its URL, as the review found it configured."""
    settings.RYSH_RECIPES_REPO = server.url("recipes.git").replace("http://", f"http://alice:{SECRET}@")
    settings.RYSH_RECIPES_BRANCH = "main"
    settings.DATA_DIR = tmp_path / "data"
    return settings.RYSH_RECIPES_REPO


@pytest.fixture
def argv(monkeypatch, tmp_path):
    """Every argv started from Python, and git's own trace of every process it runs in turn
    (git-remote-http, the credential helper): where a secret in an argument would show."""
    seen: list[list[str]] = []
    real = subprocess.Popen

    class Recording(real):
        def __init__(self, args, *a, **kw):
            seen.append([str(x) for x in args] if isinstance(args, (list, tuple)) else [str(args)])
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Recording)
    trace = tmp_path / "git-trace.log"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    return seen, trace


def leaks(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_it_clones_fetches_and_pushes_with_the_token_never_in_argv_config_or_database(tokened, server, argv):
    seen, trace = argv
    grace, linus = make_user("grace"), make_user("linus")
    recipes_sync()  # the mirror's clone and a fetch
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"))  # a push
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)  # fetch, merge, push
    assert change.state == "merged"
    served = server.root / "recipes.git"
    assert git(served, "rev-parse", "refs/heads/main") == change.merged_sha  # the pushes authenticated
    assert ("POST", "/recipes.git/git-receive-pack", "ok") in server.logins
    assert ("POST", "/recipes.git/git-upload-pack", "ok") in server.logins
    assert not [v for v in server.logins if v[2] == "wrong"]

    git_calls = [a for a in seen if a and a[0] == "git"]
    assert any("clone" in a for a in git_calls) and any("push" in a for a in git_calls)
    assert not [a for a in seen if any(SECRET in part for part in a)]
    assert trace.is_file() and "git-remote-http" in trace.read_text() and SECRET not in trace.read_text()

    mirror = open_repo(tokened).git_dir
    assert git(mirror, "config", "--get", "remote.origin.url") == server.url("recipes.git")
    assert leaks(mirror) == []
    assert ChangeRequest.objects.get().repo == f"http://***@127.0.0.1:{server.server.server_port}/recipes.git"
    assert not ChangeRequest.objects.filter(repo__contains=SECRET).exists()


def test_seed_demo_says_which_repository_without_its_token(tokened, server, capsys):
    out = StringIO()
    call_command("seed_demo", stdout=out)
    said = out.getvalue()
    assert f"recipes: http://***@127.0.0.1:{server.server.server_port}/recipes.git" in said
    assert "synced: 2 recipes" in said and SECRET not in said + capsys.readouterr().out


def test_a_wrong_token_is_refused_and_not_shown(server, settings, tmp_path):
    settings.RYSH_RECIPES_REPO = server.url("recipes.git").replace("http://", "http://alice:n0tThePassw0rd@")
    settings.DATA_DIR = tmp_path / "data"
    with pytest.raises(RepoError) as failed:
        recipes_sync()
    assert "n0tThePassw0rd" not in str(failed.value) and "127.0.0.1" in str(failed.value)
    assert ("GET", "/recipes.git/info/refs", "wrong") in server.logins


def test_a_mirror_cloned_with_the_token_in_its_config_is_cleaned_and_still_fetches(tokened, server, argv):
    recipes_sync()
    mirror = open_repo(tokened).git_dir
    git(mirror, "config", "remote.origin.url", tokened)  # as an older version cloned it
    assert leaks(mirror)
    repo = open_repo(tokened)
    assert git(mirror, "config", "--get", "remote.origin.url") == server.url("recipes.git") and leaks(mirror) == []
    repo.refresh("main")  # the fetch authenticates without the URL's token
    assert ("POST", "/recipes.git/git-upload-pack", "ok") in server.logins


def test_existing_change_requests_are_redacted_and_still_merge(tokened, server):
    migration = importlib.import_module("reviews.migrations.0002_redact_change_request_repo")
    grace, linus = make_user("grace"), make_user("linus")
    recipes_sync()
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"))
    ChangeRequest.objects.filter(pk=change.pk).update(repo=tokened)  # as an older version kept it
    migration.redact_locations(apps, None)
    change.refresh_from_db()
    assert change.repo == redact(tokened) and SECRET not in change.repo
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged"  # opened with the configured token again
    assert git(server.root / "recipes.git", "rev-parse", "refs/heads/main") == change.merged_sha


def test_the_other_locations_are_given_to_git_as_they_are():
    assert split_credential("https://u:p%40ss@host:8443/r.git")[0] == "https://host:8443/r.git"
    credential = split_credential("https://u:p%40ss@host:8443/r.git")[1]
    assert (credential.host, credential.username, credential.password) == ("host:8443", "u", "p@ss")
    assert split_credential("https://tok@host/r.git")[1].password is None
    for location in ("ssh://git@host/org/r.git", "git@host:org/r.git", "/srv/recipes", "https://host/r.git"):
        assert split_credential(location) == (location, None)
    configured = "https://u:tok@host/r.git"
    assert reopen_location("https://***@host/r.git", configured) == configured
    assert reopen_location("https://***@elsewhere/r.git", configured) == "https://***@elsewhere/r.git"
    assert reopen_location("/srv/recipes", "/srv/recipes") == "/srv/recipes"
