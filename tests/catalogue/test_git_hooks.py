"""The push hook (/hooks/git/): a signed push to the tracked branch queues a sync that a worker
runs; anything unsigned, badly signed, too large, for another branch, or seen before does not.
Signed requests are rows on the repository page, which only admins see; refused ones and bodies
seen again within the hour are counted there per day and reason, never stored one by one."""

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import OrmQ

from catalogue.hooks import KEEP, SYNC_FUNC
from catalogue.models import GitDelivery, GitHookRefusal, Recipe
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


class Forge:
    """Posts as a forge would (no cookie, no CSRF token); what the request leaves to run once it
    commits (the queued sync) is queued, as in production."""

    def __init__(self, capture):
        self.client = Client(enforce_csrf_checks=True)
        self.capture = capture

    def post(self, url, body, **options):
        with self.capture(execute=True):
            return self.client.post(url, body, **options)

    def get(self, url):
        return self.client.get(url)


@pytest.fixture
def forge(django_capture_on_commit_callbacks):
    return Forge(django_capture_on_commit_callbacks)


def queued_syncs() -> list[int]:
    return [q.task["args"][0] for q in OrmQ.objects.all() if q.func() == SYNC_FUNC]


def run_worker() -> list[str]:
    """What a django-q2 worker does with the queue: run each queued hook sync, once."""
    done = []
    for task in OrmQ.objects.all():
        if task.func() == SYNC_FUNC:
            done.append(import_string(task.func())(*task.task["args"]))
            task.delete()
    return done


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


def post(forge: Forge, body: bytes, headers: dict):
    return forge.post(URL, body, content_type="application/json", headers=headers)


def description() -> str:
    recipe = Recipe.objects.select_related("latest").get(kind="task", name="report")
    return recipe.latest.spec["description"]


def last() -> GitDelivery:
    return GitDelivery.objects.order_by("-id").first()


def counted() -> dict[tuple[str, int], int]:
    return {(r.reason, r.status): r.count for r in GitHookRefusal.objects.all()}


@pytest.mark.parametrize("headers", [github, gitlab, gitea, forgejo])
def test_a_signed_push_queues_a_sync_that_a_worker_runs(hook, forge, headers, monkeypatch):
    assert description() == "A task"
    body = push_body()
    in_request = []
    monkeypatch.setattr("catalogue.tasks.recipes_sync", lambda: in_request.append(1))
    response = post(forge, body, headers(body))
    assert in_request == []  # nothing synced while the forge waited
    monkeypatch.undo()
    assert response.status_code == 202, response.content
    assert response.json() | {"delivery": 0} == {
        "delivery": 0,
        "outcome": "accepted",
        "reason": "push to main",
        "sync": "queued",
    }
    row = last()
    assert queued_syncs() == [row.pk]
    assert (row.forge, row.outcome, row.reason, row.ref, row.sync) == (
        headers.__name__,
        "accepted",
        "push to main",
        "refs/heads/main",
        "queued",
    )
    assert run_worker()[0].startswith("synced: 2 recipes, 1 changed")
    assert description() == "A sharper report"
    row.refresh_from_db()
    assert row.delivery_id and row.sync.startswith("synced:") and row.outcome == "accepted"


@pytest.mark.django_db(transaction=True)
def test_a_push_over_real_http_is_in_the_catalogue_once_a_worker_runs_it(hook, live_server):
    """A real server and a real socket: no test client's shortcuts (CSRF, the commit included)."""
    body = push_body()
    request = urllib.request.Request(
        live_server.url + URL, data=body, method="POST", headers={"Content-Type": "application/json", **github(body)}
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202
    assert time.monotonic() - started < 5
    assert description() == "A task" and queued_syncs() == [last().pk]
    run_worker()
    assert description() == "A sharper report"
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
    assert post(forge, body, github(body)).status_code == 202
    run_worker()
    assert description() == "Pushed from a laptop"


def test_it_refuses_a_bad_signature_counts_it_and_syncs_nothing(hook, forge):
    body = push_body()
    response = post(forge, body, github(body, secret="not-the-secret"))
    assert response.status_code == 401
    assert response.json() == {"outcome": "refused", "reason": "bad signature (X-Hub-Signature-256)"}
    assert counted() == {("bad signature (X-Hub-Signature-256)", 401): 1}
    assert not GitDelivery.objects.exists() and queued_syncs() == []
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
    assert response.json() == {"outcome": "refused", "reason": reason}
    assert counted() == {(reason, 401): 1} and not GitDelivery.objects.exists()
    assert description() == "A task"


def test_a_refused_delivery_does_not_take_its_id_from_the_real_one(hook, forge):
    body = push_body()
    assert post(forge, body, github(body, secret="forged", delivery="gh-7")).status_code == 401
    response = post(forge, body, github(body, delivery="gh-7"))
    assert response.json()["outcome"] == "accepted"
    run_worker()
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
    assert description() == "A task" and queued_syncs() == []


def test_a_redelivery_is_a_duplicate_and_syncs_nothing(hook, forge):
    body = push_body()
    first = post(forge, body, github(body, delivery="gh-42")).json()
    run_worker()
    again = post(forge, body, github(body, delivery="gh-42"))
    assert again.status_code == 200
    assert again.json() == {"outcome": "ignored", "reason": f"duplicate of #{first['delivery']}"}
    assert queued_syncs() == [] and GitDelivery.objects.count() == 1
    assert counted() == {("a redelivery of a delivery of the last hour", 200): 1}
    # past the hour, a redelivery is a row of its own, a duplicate that syncs nothing
    GitDelivery.objects.update(received_at=timezone.now() - timedelta(hours=2))
    assert post(forge, body, github(body, delivery="gh-42")).json()["reason"] == f"duplicate of #{first['delivery']}"
    assert last().duplicate_of == first["delivery"] and queued_syncs() == []
    # the same body from another forge within the hour is a replay as well
    assert post(forge, body, gitlab(body, delivery="gh-42")).status_code == 409  # but not the same body


def test_gitlab_idempotency_key_names_the_delivery_across_retries(hook, forge):
    body = push_body()
    headers = gitlab(body) | {"Idempotency-Key": "idem-1"}
    post(forge, body, headers)
    retry = post(forge, body, headers | {"X-Gitlab-Event-UUID": "another-uuid"})
    assert retry.json()["reason"].startswith("duplicate of #")
    assert last().delivery_id == "idem-1"


def test_a_failed_sync_is_on_its_delivery_and_a_redelivery_tries_again(hook, forge, settings, tmp_path):
    settings.RYSH_RECIPES_REPO = str(tmp_path / "gone")
    body = push_body()
    assert post(forge, body, github(body, delivery="gh-5")).status_code == 202
    assert run_worker()[0].startswith("sync failed:")
    assert last().outcome == "failed" and last().sync.startswith("sync failed:")
    settings.RYSH_RECIPES_REPO = str(hook.path)
    retry = post(forge, body, github(body, delivery="gh-5"))
    assert retry.json()["outcome"] == "accepted"
    run_worker()
    assert description() == "A sharper report"


def test_it_refuses_a_body_over_one_mib(hook, forge):
    body = push_body()[:-1] + b', "pad": "' + b"x" * (1024 * 1024) + b'"}'
    response = post(forge, body, github(body))
    assert response.status_code == 413
    assert counted() == {("body over 1 MiB", 413): 1}
    assert description() == "A task"


def test_it_says_the_hook_is_off_without_a_secret(hook, forge, settings):
    settings.RYSH_GIT_HOOK_SECRET = ""
    body = push_body()
    response = post(forge, body, github(body, secret=""))
    assert response.status_code == 503
    assert response.json()["reason"] == "the push hook is off (RYSH_GIT_HOOK_SECRET is not set)"
    assert not GitDelivery.objects.exists() and queued_syncs() == []
    assert description() == "A task"


def test_it_refuses_a_signed_body_that_is_not_json(hook, forge):
    body = b"payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%7D"
    response = post(forge, body, github(body))
    assert response.status_code == 400
    assert "application/json" in response.json()["reason"]
    assert last().outcome == "refused"  # signed: a row, the forge's to fix


def test_it_answers_only_post(hook, forge):
    assert forge.get(URL).status_code == 405
    assert GitDelivery.objects.count() == 0 and GitHookRefusal.objects.count() == 0


def ping(n: int) -> bytes:
    return json.dumps({"zen": f"ping {n}", "hook_id": n}).encode()


def test_it_keeps_the_last_deliveries_only(hook, forge, monkeypatch):
    monkeypatch.setattr("catalogue.hooks.KEEP", 3)
    for n in range(5):
        post(forge, ping(n), github(ping(n), event="ping", delivery=f"p-{n}"))
    assert list(GitDelivery.objects.values_list("delivery_id", flat=True)) == ["p-4", "p-3", "p-2"]
    assert KEEP == 500


def test_refused_requests_are_counted_and_never_push_a_real_delivery_out(hook, forge, settings, monkeypatch):
    """500 junk requests used to be 500 rows, and the log kept the last 500: the real deliveries went."""
    monkeypatch.setattr("catalogue.hooks.KEEP", 3)
    body = push_body()
    real = post(forge, body, github(body, delivery="gh-real")).json()["delivery"]
    for n in range(40):
        post(forge, body, github(body, secret="guess", delivery=f"junk-{n}"))
        post(forge, body, {})
    settings.RYSH_GIT_HOOK_SECRET = ""  # the hook off: still counted, still not stored
    for _ in range(20):
        post(forge, body, github(body, secret=""))
    assert list(GitDelivery.objects.values_list("pk", flat=True)) == [real]
    assert counted() == {
        ("bad signature (X-Hub-Signature-256)", 401): 40,
        ("unsigned: no X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event or X-Forgejo-Event", 401): 40,
        ("the push hook is off (RYSH_GIT_HOOK_SECRET is not set)", 503): 20,
    }
    assert GitHookRefusal.objects.get(status=503).last_address == "127.0.0.1"


def test_a_captured_push_replayed_under_a_fresh_delivery_id_is_refused(hook, forge):
    """The delivery id is not signed: within the hour a body seen before is a replay whatever its
    id, refused (409), counted, and it syncs nothing; past the hour it may sync the repository again."""
    body = push_body()
    first = post(forge, body, github(body, delivery="gh-1")).json()["delivery"]
    run_worker()
    for n in range(2, 6):
        replay = post(forge, body, github(body, delivery=f"gh-{n}"))
        assert replay.status_code == 409
        assert replay.json() == {
            "outcome": "refused",
            "reason": f"a replay: this body was delivered as #{first} within the hour, under another delivery id",
        }
    assert queued_syncs() == [] and GitDelivery.objects.count() == 1
    assert counted() == {("a body delivered within the hour under another delivery id (a replay)", 409): 4}
    GitDelivery.objects.update(received_at=timezone.now() - timedelta(minutes=61))
    assert post(forge, body, github(body, delivery="gh-9")).status_code == 202


def test_admins_see_the_deliveries_on_the_repository_page(hook, forge, client):
    body = push_body()
    post(forge, body, github(body, delivery="gh-page"))
    login(client, make_user("ada", role="admin"))
    assert "queued" in client.get("/recipes/repository/").content.decode()
    run_worker()
    for _ in range(3):
        post(forge, body, github(body, secret="forged", delivery="gh-forged"))
    assert 'href="/recipes/repository/"' in client.get("/recipes/").content.decode()
    page = client.get("/recipes/repository/").content.decode()
    assert "gh-page" in page and "push to main" in page and "synced: 2 recipes, 1 changed" in page
    assert "gh-forged" not in page  # a refused request's words are not kept
    assert "bad signature (X-Hub-Signature-256)</td>" in page and '<td class="num">3</td>' in page
    assert "http://127.0.0.1:8000/hooks/git/" in page and SECRET not in page


@pytest.mark.parametrize("role", ["viewer", "operator", "editor"])
def test_others_cannot_see_the_deliveries(hook, client, role):
    login(client, make_user("olga", role=role))
    assert client.get("/recipes/repository/").status_code == 403
    assert 'href="/recipes/repository/"' not in client.get("/recipes/").content.decode()


def test_anonymous_users_are_sent_to_log_in(client):
    assert client.get("/recipes/repository/")["Location"].startswith("/login/")
