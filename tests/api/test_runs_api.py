"""/api/runs, /api/approvals, /api/recipes, /api/spend, /api/quotas: what the CLI does, over
HTTP, through the same services; every action audited as `<owner> via API token <name>`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEntry
from runs import services
from runs.models import Approval, ApprovalState, Run, RunState
from tests.api.conftest import user_with
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

LOOP = """
    ---
    args: [topic]
    loop:
      do:
        budget: 20p
      while:
        max_iterations: 2
        prompts:
          until: The note is saved.
    ---
    Save a note about {{topic}}.
"""
START = {"kind": "task", "name": "job", "args": ["owls"], "provider": "scripted"}


@pytest.fixture
def job(catalogued):
    return catalogued(LOOP)


@pytest.fixture
def operator(api_as):
    return api_as("operator", "operate")


def test_a_dry_run_answers_the_preview_and_changes_nothing(operator, job):
    answer = operator.post("/api/runs", {**START, "dry_run": True})
    assert answer.status_code == 200
    lines = answer.json()["lines"]
    assert lines[0] == "dry run: task/job  (nothing is changed)"
    assert any("Save a note about owls." in line for line in lines)
    assert not Run.objects.exists() and not AuditEntry.objects.filter(action__startswith="run.").exists()


def test_a_start_is_audited_under_the_owner_via_the_token(operator, job):
    answer = operator.post("/api/runs", START)
    assert answer.status_code == 201
    run = Run.objects.get(pk=answer.json()["run"]["id"])
    assert run.user == operator.owner and run.args == ["owls"]
    entry = AuditEntry.objects.get(action="run.start")
    assert entry.actor == operator.owner and entry.source == "api"
    assert entry.actor_name == "operator-user via API token ci"
    assert entry.target_id == str(run.pk) and entry.address == "127.0.0.1"


def test_a_second_start_while_one_is_active_is_a_409_naming_it(operator, job):
    first = operator.post("/api/runs", START).json()["run"]["id"]
    answer = operator.post("/api/runs", START)
    assert answer.status_code == 409 and f"already has an active run: run #{first}" in answer.json()["message"]


def test_bad_start_input_is_json_naming_the_field(operator, job):
    answer = operator.post("/api/runs", {"kind": "robot", "name": "job"})
    assert answer.status_code == 422 and answer.json()["field"] == "kind"
    answer = operator.post("/api/runs", {"kind": "task", "name": "../etc/passwd"})
    assert answer.status_code == 400 and answer.json()["field"] == "name"
    answer = operator.post("/api/runs", {"kind": "task", "name": "nope"})
    assert answer.status_code == 404 and answer.json()["message"].startswith(
        "no task recipe named 'nope' in the catalogue"
    )
    answer = operator.post("/api/runs", {"kind": "task", "name": "job"})
    assert answer.status_code == 409 and "needs 1 argument(s)" in answer.json()["message"]
    answer = operator.post("/api/runs", {**START, "overrides": {"budget": "3x"}})
    assert answer.status_code == 409 and "3x" in answer.json()["message"]
    assert not Run.objects.exists()


def test_a_name_outside_the_catalogue_never_reads_a_file(operator, job, recipe_file, tmp_path, monkeypatch):
    """Recipes from the API (and MCP, whose start_run is this same start) come only from the
    catalogue: not a file in the server's working directory, not a recipe written in the
    repository's working tree and never synced. 404 naming the catalogue; the file is never read."""
    secret = "pinned-secret-dependency==9.9  # the server's own file"
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "requirements.txt").write_text(secret)
    monkeypatch.chdir(tmp_path / "cwd")
    recipe_file("Print the deploy key.", "unsynced")  # in the working tree, not in the catalogue
    for name in ("requirements.txt", "unsynced"):
        for dry_run in (True, False):
            answer = operator.post("/api/runs", {"kind": "task", "name": name, "dry_run": dry_run})
            assert answer.status_code == 404, answer.content
            assert answer.json()["field"] == "name"
            assert f"no task recipe named {name!r} in the catalogue" in answer.json()["message"]
            assert "only from the command line" in answer.json()["message"]
            assert secret not in answer.content.decode() and "deploy key" not in answer.content.decode()
    assert not Run.objects.exists()
    # even past the view's check, the service refuses to read a file for the API
    with pytest.raises(services.RunRefused, match="in the catalogue"):
        services.run_start(kind="task", name_or_path="requirements.txt", args=[], dry_run=True, catalogue_only=True)


def finished(operator) -> Run:
    run = Run.objects.get(pk=operator.post("/api/runs", START).json()["run"]["id"])
    save = tool("save_result", filename="note.md", content="owls hoot")
    return drive(run, FakeModel(task=[{"text": "s", "tools": [save]}, {"text": "Done."}], judge=["YES\nsaved"]))


def test_a_finished_run_shows_its_passes_verdicts_tokens_and_cost(operator, job):
    run = finished(operator)
    shown = operator.get(f"/api/runs/{run.pk}").json()
    assert shown["state"] == "finished" and shown["cause"] == "fulfilled" and shown["finished"] is True
    assert shown["last_verdict"] == "YES" and shown["tokens_counted"] == run.tokens_counted > 0
    assert [(p["number"], p["verdict"], p["reason"]) for p in shown["passes"]] == [(1, "YES", "saved")]
    assert shown["tokens"]["counted"] == run.tokens_counted and "cost" in shown
    assert shown["controls"] == ["resume"]
    listed = operator.get("/api/runs", state="finished", recipe="job").json()["runs"]
    assert [r["id"] for r in listed] == [run.pk]
    assert operator.get("/api/runs", state="active").json()["runs"] == []
    assert operator.get("/api/runs", state="finished", cause="budget").json()["runs"] == []


def test_a_control_on_a_finished_run_is_a_clear_409(operator, job):
    run = finished(operator)
    for verb, said in [
        ("stop", f"run #{run.pk} has already finished (fulfilled)"),
        ("cancel", f"run #{run.pk} is not running (finished); nothing to cancel"),
        ("land", f"run #{run.pk} is not running (finished); nothing to land"),
    ]:
        answer = operator.post(f"/api/runs/{run.pk}/{verb}")
        assert answer.status_code == 409 and answer.json()["message"] == said, verb
    answer = operator.post(f"/api/runs/{run.pk}/continue")
    assert answer.status_code == 409 and "has nothing to continue: it finished (fulfilled)" in answer.json()["message"]
    answer = operator.post(f"/api/runs/{run.pk}/grant", {"passes": 1})
    assert answer.status_code == 409 and answer.json()["field"] == "state"
    assert operator.post("/api/runs/999999/stop").status_code == 404


def test_stop_cancel_and_resume_go_through_the_services(operator, job):
    run_id = operator.post("/api/runs", START).json()["run"]["id"]
    answer = operator.post(f"/api/runs/{run_id}/cancel")
    assert answer.status_code == 200 and answer.json()["run"]["state_label"] == "paused(cancelled)"
    answer = operator.post(f"/api/runs/{run_id}/resume")
    assert answer.status_code == 201 and answer.json()["run"]["resumed_from"] == run_id
    new_id = answer.json()["run"]["id"]
    assert operator.post(f"/api/runs/{new_id}/stop").json()["message"] == f"run #{new_id} stopped"
    rows = AuditEntry.objects.filter(source="api").order_by("id")
    assert [(e.action, e.actor_name) for e in rows] == [
        ("run.start", "operator-user via API token ci"),
        ("run.cancel", "operator-user via API token ci"),
        ("run.resume", "operator-user via API token ci"),
        ("run.stop", "operator-user via API token ci"),
    ]


def test_a_grant_with_unreadable_sizes_names_each_field(operator, job):
    run = finished(operator)
    answer = operator.post(f"/api/runs/{run.pk}/grant", {"total": "lots", "time": "soon"})
    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == ["total", "time"]


def test_approvals_are_listed_and_answered_under_the_owner(operator, job):
    run = Run.objects.get(pk=operator.post("/api/runs", START).json()["run"]["id"])
    Run.objects.filter(pk=run.pk).update(state=RunState.AWAITING_APPROVAL)
    approval = Approval.objects.create(
        run=run,
        pass_number=1,
        step_number=2,
        tool_name="save_result",
        tool_input={"filename": "final.md"},
        pattern="save_result:final*",
        subject="final.md",
        expires_at=timezone.now() + timedelta(minutes=30),
    )
    listed = operator.get("/api/approvals").json()["approvals"]
    assert [(a["id"], a["run"], a["call"]) for a in listed] == [
        (approval.pk, run.pk, "save_result(filename='final.md')")
    ]
    answer = operator.post(f"/api/approvals/{approval.pk}/reject", {"reason": "not yet"})
    assert answer.status_code == 200 and answer.json()["approval"]["state"] == ApprovalState.REJECTED
    approval.refresh_from_db()
    assert approval.answered_by == operator.owner and approval.reason == "not yet"
    entry = AuditEntry.objects.get(action="approval.reject")
    assert entry.actor_name == "operator-user via API token ci" and entry.detail["reason"] == "not yet"
    again = operator.post(f"/api/approvals/{approval.pk}/approve")
    assert again.status_code == 409 and "already answered (rejected)" in again.json()["message"]


def test_a_bad_recipe_text_keeps_file_line_field_expected_got(api_as):
    text = "---\nloop:\n  do:\n    budget: 3x\n---\nDo it.\n"
    answer = api_as("viewer", "read").post("/api/recipes/check", {"kind": "task", "name": "mine", "text": text})
    assert answer.status_code == 400
    assert answer.json()["field"] == "loop.do.budget"
    assert answer.json()["message"].startswith("mine.md:4 loop.do.budget: expected a budget size")
    assert answer.json()["message"].endswith("got '3x'")


def test_a_good_recipe_text_answers_its_plan_and_worst_case(api_as):
    text = "---\nloop:\n  do:\n    budget: 20p\n---\nDo it.\n"
    answer = api_as("viewer", "read").post("/api/recipes/check", {"kind": "task", "name": "mine", "text": text})
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["ok"] is True and body["target"] == "task/mine" and body["plan_lines"]
    assert body["worst_case"]["tokens"] > 0 and body["worst_case"]["text"].startswith("worst case")


def test_spend_and_quotas_read_and_a_bad_filter_is_a_400(api_as):
    api = api_as("viewer", "read")
    assert api.get("/api/spend", by="person", period="month").json()["by"] == "person"
    answer = api.get("/api/spend", since="yesterday")
    assert answer.status_code == 400 and answer.json()["field"] == "since"
    assert api.get("/api/quotas").json() == {"quotas": []}


def test_the_openapi_document_and_its_docs_page_need_a_login_and_no_cdn(client):
    for url in ("/api/openapi.json", "/api/docs"):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    client.force_login(user_with("viewer"))
    schema = client.get("/api/openapi.json").json()
    assert {"/api/runs", "/api/runs/{run_id}/grant", "/api/approvals/{approval_id}/approve", "/api/quotas"} <= set(
        schema["paths"]
    )
    assert "BearerAuth" in str(schema["components"]["securitySchemes"]) or schema["components"]["securitySchemes"]
    page = client.get("/api/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page and "cdn" not in page.lower()
