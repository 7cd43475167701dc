"""Every call is checked twice: the token's scope (403 naming the scope) and its owner's roles
(403 naming the role: a token never does more than its owner)."""

from __future__ import annotations

import pytest

from runs.models import Run

pytestmark = pytest.mark.django_db

START = {"kind": "task", "name": "job", "provider": "scripted"}
ONE_PASS = """
    ---
    loop:
      do:
        budget: 20p
    ---
    Save a note.
"""


@pytest.fixture
def job(catalogued):
    return catalogued(ONE_PASS)


def test_a_read_token_reads_but_cannot_start_a_run(api_as, job):
    api = api_as("operator", "read")
    assert api.get("/api/runs").status_code == 200
    answer = api.post("/api/runs", START)
    assert answer.status_code == 403
    assert answer.json()["field"] == "scope"
    assert answer.json()["message"] == 'this token lacks the "operate" scope (it has: read)'
    assert not Run.objects.exists()


def test_an_operate_token_of_a_viewer_cannot_start_a_run(api_as, job):
    answer = api_as("viewer", "operate").post("/api/runs", START)
    assert answer.status_code == 403
    assert answer.json() == {
        "field": "role",
        "message": "viewer-user's role (viewer) cannot operate: it needs the admin or operator role",
        "errors": [answer.json()["errors"][0]],
    }
    assert not Run.objects.exists()


def test_an_operate_token_of_an_operator_starts_a_run_and_reads_it(api_as, job):
    api = api_as("operator", "operate")
    answer = api.post("/api/runs", START)
    assert answer.status_code == 201
    run_id = answer.json()["run"]["id"]
    assert api.get(f"/api/runs/{run_id}").json()["state"] == "queued"  # operate reads too


def test_an_admin_token_operates_and_the_owner_losing_the_role_stops_it(api_as, job):
    api = api_as("admin", "admin")
    assert api.post("/api/runs", {**START, "dry_run": True}).status_code == 200
    api.owner.groups.clear()  # no group: reads only
    answer = api.post("/api/runs", {**START, "dry_run": True})
    assert answer.status_code == 403 and answer.json()["field"] == "role"
    assert api.get("/api/runs").status_code == 200


@pytest.mark.parametrize(
    "method, path",
    [
        ("post", "/api/runs/1/stop"),
        ("post", "/api/runs/1/cancel"),
        ("post", "/api/runs/1/continue"),
        ("post", "/api/runs/1/resume"),
        ("post", "/api/runs/1/land"),
        ("post", "/api/runs/1/grant"),
        ("post", "/api/approvals/1/approve"),
        ("post", "/api/approvals/1/reject"),
    ],
)
def test_every_control_needs_the_operate_scope(api_as, method, path):
    answer = getattr(api_as("admin", "read"), method)(path, {})
    assert answer.status_code == 403 and '"operate" scope' in answer.json()["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/recipes",
        "/api/recipes/task/job",
        "/api/runs",
        "/api/runs/1",
        "/api/approvals",
        "/api/spend",
        "/api/quotas",
    ],
)
def test_every_read_is_open_to_a_read_token_of_any_role(api_as, path):
    assert api_as(None, "read").get(path).status_code in (200, 404)  # 404: no such run or recipe here
