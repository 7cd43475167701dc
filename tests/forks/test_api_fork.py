"""POST /api/runs/{id}/fork and GET /api/runs/{a}/compare/{b}: `auto <kind> fork|compare` over
HTTP with a Bearer token. fork_plan and run_fork are stand-ins here that record what was asked
(the real ones: tests/forks/test_fork_front_doors_e2e.py); the comparison is the real one."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from runs import forks, services
from runs.models import Run
from tests.api.conftest import api_as  # noqa: F401 - the fixture
from tests.conftest import drive
from tests.fake_model import FakeModel

pytestmark = pytest.mark.django_db

LOOP = """
    ---
    loop:
      do:
        budget: 20p
      while:
        max_iterations: 3
        prompts:
          until: The note is saved.
    ---
    Save a note.
"""


@pytest.fixture
def parent(catalogued):
    catalogued(LOOP)
    run = services.run_start(kind="task", name_or_path="job", args=[], provider="scripted", catalogue_only=True)
    return drive(run, FakeModel(judge=["NO\nnot yet"] * 3))


@pytest.fixture
def asked(monkeypatch):
    """The plan names what was asked; the fork is a run of the recipe with its lineage set and
    audited `run.start` as any start through run_start is."""
    seen = []

    def plan(*, run, pass_number, redo=False, edits=None, target=None):
        seen.append(("plan", pass_number, redo, edits))
        if pass_number > run.pass_number:
            raise forks.ForkRefused(f"run #{run.pk} has no pass {pass_number}", field="pass_number")
        if edits and edits.until == "":
            raise forks.ForkRefused("until: left empty; the judge needs a goal", field="until")
        if run.state == "queued":
            raise forks.ForkRefused(f"run #{run.pk} has no finished pass yet")
        return forks.ForkPlan(
            parent=run, from_pass=pass_number - redo, redo=redo, recipe_text="x", worst_tokens=40_000,
            parent_spent_tokens=3_000, notes=[], lines=[],
        )  # fmt: skip

    def fork(*, run, pass_number, user, redo=False, edits=None, provider=None, target=None):
        seen.append(("fork", pass_number, user))
        new = services.run_start(kind="task", name_or_path="job", args=[], provider="scripted", user=user)
        Run.objects.filter(pk=new.pk).update(forked_from=run, fork_pass=pass_number, fork_edits=edits.edited())
        new.refresh_from_db()
        return new

    monkeypatch.setattr(forks, "fork_plan", plan)
    monkeypatch.setattr(forks, "run_fork", fork)
    return seen


def test_a_dry_run_answers_the_plan_and_starts_nothing(api_as, parent, asked):
    answer = api_as("operator", "operate").post(f"/api/runs/{parent.pk}/fork", {"pass": 2, "dry_run": True})
    assert answer.status_code == 200, answer.content
    plan = answer.json()["plan"]
    assert answer.json()["dry_run"] is True and plan["parent"]["id"] == parent.pk and plan["from_pass"] == 2
    assert plan["worst_tokens"] == 40_000 and plan["parent_spent_tokens"] == 3_000
    assert plan["lines"][0] == f"fork of run #{parent.pk} (task/job) from the end of pass 2; it goes on with pass 3"
    assert Run.objects.count() == 1 and [a[0] for a in asked] == ["plan"]


def test_a_fork_starts_under_the_tokens_owner_with_the_edits_and_is_audited(api_as, parent, asked):
    operator = api_as("operator", "operate")
    body = {"pass": 2, "prompt": "Save a better note.", "until": "Saved well.", "budget": "30p"}
    answer = operator.post(f"/api/runs/{parent.pk}/fork", body)
    assert answer.status_code == 201, answer.content
    shown = answer.json()
    fork = Run.objects.get(pk=shown["run"]["id"])
    assert shown["forked_from"] == parent.pk and shown["fork_pass"] == 2 and shown["run"]["forked_from"] == parent.pk
    assert fork.user == operator.owner and asked[-1] == ("fork", 2, operator.owner)
    assert fork.fork_edits == {"prompt": "Save a better note.", "until": "Saved well.", "budget": "30p"}
    entry = AuditEntry.objects.get(action="run.start", target_id=str(fork.pk))
    assert entry.actor_name == "operator-user via API token ci" and entry.source == "api"


def test_a_refusal_is_json_naming_its_field(api_as, parent, asked):
    operator = api_as("operator", "operate")
    answer = operator.post(f"/api/runs/{parent.pk}/fork", {"pass": 9})
    assert answer.status_code == 400 and answer.json()["field"] == "pass"
    assert answer.json()["message"] == f"run #{parent.pk} has no pass 9"
    answer = operator.post(f"/api/runs/{parent.pk}/fork", {"pass": 1, "until": ""})
    assert answer.status_code == 400 and answer.json()["field"] == "until"
    answer = operator.post(f"/api/runs/{parent.pk}/fork", {"redo": True})
    assert answer.status_code == 422 and answer.json()["field"] == "pass"
    assert operator.post("/api/runs/999999/fork", {"pass": 1}).status_code == 404
    assert Run.objects.count() == 1


def test_a_fork_needs_the_operate_scope_and_a_role_that_may_start_runs(api_as, parent, asked):
    answer = api_as("operator", "read", name="reader").post(f"/api/runs/{parent.pk}/fork", {"pass": 1})
    assert answer.status_code == 403 and answer.json()["field"] == "scope"
    answer = api_as("viewer", "operate").post(f"/api/runs/{parent.pk}/fork", {"pass": 1})
    assert answer.status_code == 403 and answer.json()["field"] == "role"
    assert not asked and Run.objects.count() == 1


def test_compare_answers_both_runs_side_by_side_with_the_read_scope(api_as, parent, catalogued):
    catalogued(LOOP.replace("Save a note.", "Save a short note."))
    run = services.run_start(kind="task", name_or_path="job", args=[], provider="scripted", catalogue_only=True)
    other = drive(run, FakeModel(judge=["NO\nnot yet", "YES\nsaved"]))
    answer = api_as("viewer", "read").get(f"/api/runs/{parent.pk}/compare/{other.pk}")
    assert answer.status_code == 200, answer.content
    shown = answer.json()
    assert shown["a"]["id"] == parent.pk and shown["b"]["id"] == other.pk
    passes = shown["comparison"]["passes"]
    assert [(p["a"]["verdict"], p["b"] and p["b"]["verdict"]) for p in passes] == [
        ("NO", "NO"),
        ("NO", "YES"),
        ("NO", None),
    ]
    assert passes[0]["a"]["tokens"] == parent.passes.get(number=1).tokens_counted
    assert [(d["kind"], d["text"]) for d in shown["comparison"]["prompt_diff"][1:]] == [
        ("del", "Save a note."),
        ("add", "Save a short note."),
    ]
    assert "prompt edits (A → B):" in shown["lines"]


def test_compare_refuses_runs_of_two_recipes_and_unknown_runs(api_as, parent, catalogued):
    catalogued(LOOP, "other")
    other = services.run_start(kind="task", name_or_path="other", args=[], provider="scripted", catalogue_only=True)
    reader = api_as("viewer", "read")
    answer = reader.get(f"/api/runs/{parent.pk}/compare/{other.pk}")
    assert answer.status_code == 400 and answer.json()["field"] == "b" and "one recipe" in answer.json()["message"]
    assert reader.get(f"/api/runs/{parent.pk}/compare/999999").status_code == 404
