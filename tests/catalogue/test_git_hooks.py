"""The push hook (/hooks/git/): a signed push to the tracked branch syncs the catalogue before the
answer leaves; anything unsigned, badly signed, too large, for another branch, or seen before
does not. Every request is a row on the repository page, which only admins see."""

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request

import pytest
from django.test import Client

from catalogue.hooks import KEEP
from catalogue.models import GitDelivery, Recipe
from catalogue.sync import recipes_sync
from tests.recipes_git import login, make_user, recipe_text, remote, work  # noqa: F401

pytestmark = pytest.mark.django_db
SECRET = "s3cret-hook-key"
URL = "/hooks/git/"


@pytest.fixture
def hook(settings, work):  # noqa: F811
    """The hook on, the catalogue synced, and a change to a recipe committed but not synced."""
    settings.RYSH_GIT_HOOK_SECRET = SECRET
    recipes_sync()
    work.commit("Sharper report", tasks__report=recipe_text("A sharper report"))
    return work


@pytest.fixture
def forge():
    return Client(enforce_csrf_checks=True)  # as a forge: no cookie, no CSRF token


def push_body(ref: str = "refs/heads/main") -> bytes:
    return json.dumps({"ref": ref, "before": "0" * 40, "after": "1" * 40, "commits": []}).encode()


def sign(body: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def github(body: bytes, *, event: str = "push", delivery: str = "gh-1", secret: str = SECRET) -> dict:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": f"sha256={sign(body, secret)}",
    }


def gitlab(body: bytes, *, event: str = "Push Hook", delivery: str = "gl-1", token: str = SECRET) -> dict:
    return {"X-Gitlab-Event": event, "X-Gitlab-Event-UUID": delivery, "X-Gitlab-Token": token}


def gitea(body: bytes, *, delivery: str = "gt-1") -> dict:
    """What Gitea sends: its own headers, and GitHub's and Gogs' for compatibility."""
    return {
        "X-Gitea-Event": "push",
        "X-Gitea-Delivery": delivery,
        "X-Gitea-Signature": sign(body),
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": delivery,
        "X-Gogs-Event": "push",
    }


def forgejo(body: bytes, *, delivery: str = "fj-1") -> dict:
    return {
        "X-Forgejo-Event": "push",
        "X-Forgejo-Delivery": delivery,
        "X-Forgejo-Signature": sign(body),
        "X-Gitea-Event": "push",
        "X-Gitea-Delivery": delivery,
        "X-Gitea-Signature": sign(body),
    }


def post(client, body: bytes, headers: dict):
    return client.post(URL, body, content_type="application/json", headers=headers)


def description() -> str:
    recipe = Recipe.objects.select_related("latest").get(kind="task", name="report")
    return recipe.latest.spec["description"]


def last() -> GitDelivery:
    return GitDelivery.objects.order_by("-id").first()


@pytest.mark.parametrize("headers", [github, gitlab, gitea, forgejo])
def test_it_syncs_a_signed_push_before_answering(hook, forge, headers):
    assert description() == "A task"
    body = push_body()
    started = time.monotonic()
    response = post(forge, body, headers(body))
    assert time.monotonic() - started < 5  # "within seconds": the sync is done when the forge hears back
    assert response.status_code == 200, response.content
    assert response.json()["outcome"] == "accepted"
    assert response.json()["sync"].startswith("synced: 2 recipes, 1 changed")
    assert description() == "A sharper report"
    row = last()
    assert (row.forge, row.outcome, row.reason, row.ref) == (
        headers.__name__,
        "accepted",
        "push to main",
        "refs/heads/main",
    )
    assert row.delivery_id and row.sync.startswith("synced:")


@pytest.mark.django_db(transaction=True)
def test_a_push_over_real_http_is_in_the_catalogue_within_seconds(hook, live_server):
    """A real server and a real socket: no test client's shortcuts (CSRF included)."""
    body = push_body()
    request = urllib.request.Request(
        live_server.url + URL, data=body, method="POST", headers={"Content-Type": "application/json", **github(body)}
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    assert description() == "A sharper report"
    assert time.monotonic() - started < 5
    unsigned = urllib.request.Request(live_server.url + URL, data=body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unsigned, timeout=10)
    assert refused.value.code == 401


def test_it_fetches_a_remote_repository_on_a_push(settings, remote, forge):  # noqa: F811
    settings.RYSH_GIT_HOOK_SECRET = SECRET
    recipes_sync()
    remote.commit("Pushed elsewhere", tasks__report=recipe_text("Pushed from a laptop"))
    remote.push()
    body = push_body()
    assert post(forge, body, github(body)).status_code == 200
    assert description() == "Pushed from a laptop"


def test_it_refuses_a_bad_signature_logs_it_and_syncs_nothing(hook, forge):
    body = push_body()
    response = post(forge, body, github(body, secret="not-the-secret"))
    assert response.status_code == 401
    assert response.json() == {
        "delivery": last().pk,
        "outcome": "refused",
        "reason": "bad signature (X-Hub-Signature-256)",
    }
    assert description() == "A task"
    assert SECRET not in response.content.decode()


def test_it_refuses_a_body_changed_after_signing(hook, forge):
    headers = github(push_body())
    assert post(forge, push_body("refs/heads/main "), headers).status_code == 401
    assert description() == "A task"


@pytest.mark.parametrize(
    "headers, reason",
    [
        ({}, "unsigned: no X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event or X-Forgejo-Event"),
        ({"X-GitHub-Event": "push", "X-GitHub-Delivery": "gh-9"}, "no X-Hub-Signature-256"),
        (
            {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(push_body())},
            "X-Hub-Signature-256 is not sha256=<hex>",
        ),
        ({"X-Gitlab-Event": "Push Hook"}, "no X-Gitlab-Token"),
        ({"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": SECRET + "x"}, "wrong X-Gitlab-Token"),
        ({"X-Gitea-Event": "push", "X-Hub-Signature-256": f"sha256={sign(push_body())}"}, "no X-Gitea-Signature"),
        (
            {"X-Forgejo-Event": "push", "X-Forgejo-Signature": sign(push_body(), "x")},
            "bad signature (X-Forgejo-Signature)",
        ),
    ],
)
def test_it_refuses_an_unsigned_push(hook, forge, headers, reason):
    response = post(forge, push_body(), headers)
    assert response.status_code == 401
    assert (last().outcome, last().reason, last().status) == ("refused", reason, 401)
    assert description() == "A task"


def test_a_refused_delivery_does_not_take_its_id_from_the_real_one(hook, forge):
    body = push_body()
    assert post(forge, body, github(body, secret="forged", delivery="gh-7")).status_code == 401
    response = post(forge, body, github(body, delivery="gh-7"))
    assert response.json()["outcome"] == "accepted"
    assert description() == "A sharper report"


def test_it_ignores_a_push_to_another_branch(hook, forge):
    body = push_body("refs/heads/feature")
    response = post(forge, body, gitlab(body))
    assert response.status_code == 200
    assert response.json()["reason"] == "push to feature, syncing main"
    assert last().outcome == "ignored"
    assert description() == "A task"


def test_it_ignores_a_tag_push(hook, forge):
    body = push_body("refs/tags/v1")
    assert post(forge, body, github(body)).json()["reason"] == "push to refs/tags/v1, syncing main"
    assert description() == "A task"


@pytest.mark.parametrize("headers", [github(b"{}", event="ping"), gitlab(b"{}", event="Tag Push Hook")])
def test_it_ignores_other_events(hook, forge, headers):
    response = post(forge, b"{}", headers)
    assert response.status_code == 200
    assert response.json()["outcome"] == "ignored"
    assert response.json()["reason"] == f"{headers.get('X-GitHub-Event') or headers['X-Gitlab-Event']} event"
    assert description() == "A task"


def test_a_redelivery_is_a_duplicate_and_syncs_nothing(hook, forge, monkeypatch):
    body = push_body()
    first = post(forge, body, github(body, delivery="gh-42")).json()
    calls = []
    monkeypatch.setattr("catalogue.hooks.recipes_sync", lambda: calls.append(1))
    again = post(forge, body, github(body, delivery="gh-42"))
    assert again.status_code == 200
    assert again.json()["reason"] == f"duplicate of #{first['delivery']}"
    assert calls == []
    assert last().duplicate_of == first["delivery"]
    monkeypatch.undo()
    # the same id from another forge is another delivery
    assert post(forge, body, gitlab(body, delivery="gh-42")).json()["outcome"] == "accepted"


def test_gitlab_idempotency_key_names_the_delivery_across_retries(hook, forge, monkeypatch):
    body = push_body()
    headers = gitlab(body) | {"Idempotency-Key": "idem-1"}
    post(forge, body, headers)
    retry = post(forge, body, headers | {"X-Gitlab-Event-UUID": "another-uuid"})
    assert retry.json()["reason"].startswith("duplicate of #")
    assert last().delivery_id == "idem-1"


def test_a_failed_sync_answers_502_and_a_redelivery_tries_again(hook, forge, settings, tmp_path):
    settings.RYSH_RECIPES_REPO = str(tmp_path / "gone")
    body = push_body()
    response = post(forge, body, github(body, delivery="gh-5"))
    assert response.status_code == 502
    assert last().outcome == "failed" and last().sync.startswith("sync failed:")
    settings.RYSH_RECIPES_REPO = str(hook.path)
    retry = post(forge, body, github(body, delivery="gh-5"))
    assert retry.json()["outcome"] == "accepted"
    assert description() == "A sharper report"


def test_it_refuses_a_body_over_one_mib(hook, forge):
    body = push_body()[:-1] + b', "pad": "' + b"x" * (1024 * 1024) + b'"}'
    response = post(forge, body, github(body))
    assert response.status_code == 413
    assert (last().outcome, last().reason) == ("refused", "body over 1 MiB")
    assert description() == "A task"


def test_it_says_the_hook_is_off_without_a_secret(hook, forge, settings):
    settings.RYSH_GIT_HOOK_SECRET = ""
    body = push_body()
    response = post(forge, body, github(body, secret=""))
    assert response.status_code == 503
    assert response.json()["reason"] == "the push hook is off (RYSH_GIT_HOOK_SECRET is not set)"
    assert description() == "A task"


def test_it_refuses_a_signed_body_that_is_not_json(hook, forge):
    body = b"payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%7D"
    response = post(forge, body, github(body))
    assert response.status_code == 400
    assert "application/json" in response.json()["reason"]


def test_it_answers_only_post(hook, forge):
    assert forge.get(URL).status_code == 405
    assert GitDelivery.objects.count() == 0


def test_it_keeps_the_last_deliveries_only(hook, forge, monkeypatch):
    monkeypatch.setattr("catalogue.hooks.KEEP", 3)
    for n in range(5):
        post(forge, b"{}", github(b"{}", event="ping", delivery=f"p-{n}"))
    assert list(GitDelivery.objects.values_list("delivery_id", flat=True)) == ["p-4", "p-3", "p-2"]
    assert KEEP == 500


def test_admins_see_the_deliveries_on_the_repository_page(hook, forge, client):
    body = push_body()
    post(forge, body, github(body, delivery="gh-page"))
    post(forge, body, github(body, secret="forged", delivery="gh-forged"))
    login(client, make_user("ada", role="admin"))
    assert 'href="/recipes/repository/"' in client.get("/recipes/").content.decode()
    page = client.get("/recipes/repository/").content.decode()
    assert "gh-page" in page and "push to main" in page and "synced: 2 recipes, 1 changed" in page
    assert "gh-forged" in page and "bad signature (X-Hub-Signature-256)" in page
    assert "http://127.0.0.1:8000/hooks/git/" in page and SECRET not in page


@pytest.mark.parametrize("role", ["viewer", "operator", "editor"])
def test_others_cannot_see_the_deliveries(hook, client, role):
    login(client, make_user("olga", role=role))
    assert client.get("/recipes/repository/").status_code == 403
    assert 'href="/recipes/repository/"' not in client.get("/recipes/").content.decode()


def test_anonymous_users_are_sent_to_log_in(client):
    assert client.get("/recipes/repository/")["Location"].startswith("/login/")
