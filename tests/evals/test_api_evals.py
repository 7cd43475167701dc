"""/api/recipes/{kind}/{name}/evals, /api/changes/{id}/evals, /api/suites/{id} (docs/evals.md):
a recipe's suites over HTTP with a Bearer token, typed answers in the OpenAPI document, a start
only for editors and admins with the operate scope, a refusal as JSON with its message."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from evals import services
from evals.models import CaseResult, CaseState, Suite, SuiteState
from reviews.models import ChangeRequest
from runs.models import Run
from tests.api.conftest import api_as  # noqa: F401  (the fixture)
from tests.conftest import ONE_PASS

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(catalogued):
    return catalogued(ONE_PASS)


@pytest.fixture
def editor(api_as):  # noqa: F811
    return api_as("editor", "operate")


def make_suite(target="task/job", *, states=(), state=SuiteState.DONE, **fields) -> Suite:
    """A suite with one case per state in `states` (case-1, case-2…), as a graded suite leaves it."""
    suite = Suite.objects.create(target=target, side=fields.pop("side", "main"), state=state, **fields)
    for number, case_state in enumerate(states, 1):
        failed = case_state == CaseState.FAILED
        CaseResult.objects.create(
            suite=suite,
            name=f"case-{number}",
            folder=f"tasks/job/evals/case-{number}",
            state=case_state,
            tokens=100 * number,
            cost=Decimal("0.0125") * number,
            failures=[{"assertion": "files_changed", "message": "src/other.py is outside src/*.py"}] if failed else [],
            rubric_verdict="NO" if failed else "YES",
            cause="the run could not start" if case_state == CaseState.ERROR else "",
        )
    return suite


def test_it_reads_one_suite_with_every_case_and_what_broke_it(api_as, job):  # noqa: F811
    run = Run.objects.create(kind="task", name="job", target="task/job")
    suite = make_suite(states=(CaseState.PASSED, CaseState.FAILED, CaseState.ERROR), tokens_counted=600)
    CaseResult.objects.filter(suite=suite, name="case-1").update(run=run)
    answer = api_as("viewer", "read").get(f"/api/suites/{suite.pk}")
    assert answer.status_code == 200, answer.content
    got = answer.json()
    assert (got["id"], got["target"], got["state"], got["outcome"]) == (suite.pk, "task/job", "done", "failed")
    assert got["counts"] == {"cases": 3, "passed": 1, "failed": 1, "error": 1, "broken": 0, "pending": 0}
    assert got["pass_rate"] == pytest.approx(1 / 3, abs=1e-4) and got["tokens_counted"] == 600
    cases = {c["name"]: c for c in got["cases"]}
    assert cases["case-1"]["passed"] is True and cases["case-1"]["run"] == run.pk
    assert cases["case-2"]["passed"] is False and cases["case-2"]["failures"] == [
        {"assertion": "files_changed", "message": "src/other.py is outside src/*.py"}
    ]
    assert cases["case-2"]["tokens"] == 200 and cases["case-2"]["cost"] == "0.025000"
    assert cases["case-3"]["cause"] == "the run could not start"
    assert got["url"] == "/recipes/task/job/#evals"


def test_it_lists_a_recipes_suites_newest_first_narrowed_by_side(api_as, job):  # noqa: F811
    older = make_suite(states=(CaseState.PASSED, CaseState.PASSED))
    change = ChangeRequest.objects.create(title="t", action="edit", kind="task", name="job", base_sha="0" * 40)
    newer = make_suite(states=(CaseState.PASSED, CaseState.BROKEN), side="change", change_request=change)
    running = make_suite(states=(CaseState.PENDING,), state=SuiteState.RUNNING)
    make_suite("task/other", states=(CaseState.PASSED,))
    reader = api_as("viewer", "read")
    listed = reader.get("/api/recipes/task/job/evals").json()
    assert [s["id"] for s in listed["suites"]] == [running.pk, newer.pk, older.pk]
    outcomes = {s["id"]: (s["outcome"], s["pass_rate"]) for s in listed["suites"]}
    assert outcomes == {running.pk: ("running", None), newer.pk: ("failed", 1.0), older.pk: ("passed", 1.0)}
    assert [s["id"] for s in reader.get("/api/recipes/task/job/evals", side="change").json()["suites"]] == [newer.pk]
    assert listed["suites"][1]["change"] == change.pk and listed["suites"][1]["url"] == f"/changes/{change.pk}/#evals"
    assert reader.get("/api/recipes/task/job/evals", limit=0).json()["field"] == "limit"


def test_an_unknown_suite_is_a_json_404(api_as, db):  # noqa: F811
    answer = api_as("viewer", "read").get("/api/suites/999")
    assert answer.status_code == 404 and answer.json()["message"]


def test_a_dry_run_answers_the_plan_and_starts_nothing(editor, job, monkeypatch):
    asked = {}

    def plan(**kwargs):
        asked.update(kwargs)
        return services.SuitePlan(target="task/job", side="main", commit_sha="abc", recipe_text="", budget_tokens=42)

    monkeypatch.setattr(services, "suite_plan", plan)
    answer = editor.post("/api/recipes/task/job/evals", {"dry_run": True, "case": "passes"})
    assert answer.status_code == 200, answer.content
    assert answer.json()["dry_run"] is True and answer.json()["plan"]["budget_tokens"] == 42
    assert asked == {"target": "task/job", "side": "main", "case": "passes"}
    assert not Suite.objects.exists()


def test_a_start_calls_the_service_as_the_tokens_owner_and_answers_the_suite(editor, job, monkeypatch):
    asked = {}

    def start(**kwargs):
        asked.update(kwargs)
        return make_suite(states=(CaseState.PENDING,), state=SuiteState.RUNNING, user=kwargs["user"])

    monkeypatch.setattr(services, "suite_start", start)
    answer = editor.post("/api/recipes/task/job/evals", {"provider": "scripted"})
    assert answer.status_code == 201, answer.content
    suite = answer.json()["suite"]
    assert (
        suite["state"] == "running" and suite["started_by"] == "editor-user" and suite["cases"][0]["state"] == "pending"
    )
    assert asked == {"user": editor.owner, "target": "task/job", "side": "main", "case": None, "provider": "scripted"}


def test_a_refused_suite_is_a_409_with_its_message(editor, job, monkeypatch):
    said = "quota team/day: the suite's worst case 4,000,000 tokens exceeds what is left (1,000,000)"

    def refuse(**kwargs):
        raise services.SuiteRefused(said)

    monkeypatch.setattr(services, "suite_start", refuse)
    answer = editor.post("/api/recipes/task/job/evals", {})
    assert answer.status_code == 409
    assert answer.json()["message"] == said and answer.json()["field"] == "suite"


def test_a_start_needs_the_operate_scope_and_an_editor_or_admin(api_as, job):  # noqa: F811
    read_only = api_as("editor", "read", name="reader").post("/api/recipes/task/job/evals", {"dry_run": True})
    assert read_only.status_code == 403 and read_only.json()["field"] == "scope"
    operator = api_as("operator", "operate").post("/api/recipes/task/job/evals", {"dry_run": True})
    assert operator.status_code == 403 and operator.json()["field"] == "role"
    assert "cannot edit" in operator.json()["message"]


def test_only_a_catalogue_recipe_has_suites_started(editor, job):
    missing = editor.post("/api/recipes/task/nope/evals", {})
    assert missing.status_code == 404 and "no task recipe named 'nope'" in missing.json()["message"]
    bad = editor.post("/api/recipes/task/..%2Fetc/evals", {})
    assert bad.status_code in (400, 404)


def test_a_change_request_starts_both_sides(editor, job, monkeypatch):
    change = ChangeRequest.objects.create(title="t", action="edit", kind="task", name="job", base_sha="0" * 40)

    def both(*, change, user, provider):
        made = [
            make_suite(side=side, change_request=change, state=SuiteState.RUNNING, states=(CaseState.PENDING,))
            for side in ("main", "change")
        ]
        return tuple(made)

    monkeypatch.setattr(services, "change_suites_start", both)
    answer = editor.post(f"/api/changes/{change.pk}/evals", {})
    assert answer.status_code == 201, answer.content
    got = answer.json()
    assert got["change"] == change.pk
    assert (got["suites"]["main"]["side"], got["suites"]["change"]["side"]) == ("main", "change")
    assert editor.post("/api/changes/9999/evals", {}).status_code == 404


def test_a_change_dry_run_answers_each_sides_plan_or_why_not(editor, job, monkeypatch):
    change = ChangeRequest.objects.create(title="t", action="edit", kind="task", name="job", base_sha="0" * 40)

    def plan(*, target, side, change):
        if side == "main":
            raise services.SuiteRefused("task/job has no eval cases on main")
        return services.SuitePlan(target=target, side=side, commit_sha="def", recipe_text="", budget_tokens=7)

    monkeypatch.setattr(services, "suite_plan", plan)
    got = editor.post(f"/api/changes/{change.pk}/evals", {"dry_run": True}).json()
    assert got["plans"]["main"] == {"plan": None, "refused": "task/job has no eval cases on main"}
    assert got["plans"]["change"]["plan"]["budget_tokens"] == 7 and not Suite.objects.exists()


def test_every_answer_has_its_schema_in_the_openapi_document(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("docs-reader"))
    document = client.get("/api/openapi.json").json()
    paths = document["paths"]
    for path, method in (
        ("/api/recipes/{kind}/{name}/evals", "post"),
        ("/api/recipes/{kind}/{name}/evals", "get"),
        ("/api/changes/{change_id}/evals", "post"),
        ("/api/changes/{change_id}/evals", "get"),
        ("/api/suites/{suite_id}", "get"),
    ):
        for status, response in paths[path][method]["responses"].items():
            assert "$ref" in str(response["content"]["application/json"]["schema"]), (path, method, status)
    schemas = document["components"]["schemas"]
    assert {"SuiteDetailOut", "CaseOut", "PlanOut", "FailureOut"} <= set(schemas)
    assert set(schemas["CaseOut"]["properties"]) >= {"state", "passed", "failures", "tokens", "cost", "run"}


def test_timestamps_are_iso(api_as, job):  # noqa: F811
    suite = make_suite(states=(CaseState.PASSED,), ended_at=timezone.now())
    got = api_as("viewer", "read").get(f"/api/suites/{suite.pk}").json()
    assert got["ended_at"].startswith(str(timezone.now().year))


def test_a_change_requests_newest_suite_of_each_side_is_read(api_as, job):  # noqa: F811
    change = ChangeRequest.objects.create(title="t", action="edit", kind="task", name="job", base_sha="0" * 40)
    reader = api_as("viewer", "read")
    assert reader.get(f"/api/changes/{change.pk}/evals").json() == {
        "change": change.pk,
        "suites": {"main": None, "change": None},
    }
    make_suite(side="change", change_request=change, states=(CaseState.FAILED,))
    newer = make_suite(side="change", change_request=change, states=(CaseState.PASSED,))
    on_main = make_suite(side="main", change_request=change, states=(CaseState.PASSED,))
    make_suite(side="main", states=(CaseState.FAILED,))  # main's, not this change's
    got = reader.get(f"/api/changes/{change.pk}/evals").json()["suites"]
    assert (got["main"]["id"], got["change"]["id"]) == (on_main.pk, newer.pk)
    assert got["change"]["cases"][0]["passed"] is True
    assert reader.get("/api/changes/9999/evals").status_code == 404
