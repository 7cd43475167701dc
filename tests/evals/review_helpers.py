"""A recipes repository whose task `report` has two eval cases, a change request on it, and
suites recorded as a worker would leave them (for the review, merge-gate and history tests)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from catalogue.sync import recipes_sync
from evals import services
from evals.models import CaseResult, Suite
from evals.services import SuitePlan
from tests.recipes_git import login, make_user, recipe_text

CASES = ".rysh/automations/tasks/report/evals"
TASK = "---\nuntil: The report exists.\n---\nWrite the report.\n"
EXPECT_OK = 'files_changed: ["report.md"]\nmax_tokens: 100000\n'
EXPECT_STRICT = "files_changed: []\n"


def add_cases(work) -> str:
    work.write("tasks/report/evals/writes-report/task.md", TASK)
    work.write("tasks/report/evals/writes-report/expect.yaml", EXPECT_OK)
    work.write("tasks/report/evals/touches-nothing/task.md", TASK)
    work.write("tasks/report/evals/touches-nothing/expect.yaml", EXPECT_STRICT)
    sha = work.commit("Two eval cases")
    recipes_sync()
    return sha


@pytest.fixture
def cased(work):
    """`work` with the two cases, synced; grace (editor) proposes, linus (editor) reviews."""
    add_cases(work)
    return work


@pytest.fixture
def grace(cased):
    return login(Client(), make_user("grace"))


@pytest.fixture
def linus(cased):
    return login(Client(), make_user("linus"))


def propose(client, text=None, message="Bigger budget"):
    from reviews.models import ChangeRequest

    client.post(
        "/recipes/task/report/edit/",
        {"text": text or recipe_text("bigger", size="5b", total="25b"), "message": message},
    )
    return ChangeRequest.objects.latest("id")


def record_suite(change, side: str, results: dict[str, tuple], *, sha: str | None = None, state="done", **fields):
    """A suite as graded: results name -> (state, tokens, cost, failures)."""
    suite = Suite.objects.create(
        target="task/report",
        side=side,
        change_request=change,
        commit_sha=sha if sha is not None else (change.head_sha if side == "change" else change.base_sha),
        state=state,
        budget_tokens=1000,
        **fields,
    )
    for name, (case_state, tokens, cost, failures) in results.items():
        CaseResult.objects.create(
            suite=suite,
            name=name,
            folder=f"{CASES}/{name}",
            state=case_state,
            tokens=tokens,
            cost=Decimal(cost) if cost is not None else None,
            failures=[{"assertion": a, "message": m} for a, m in failures],
            digest=f"d-{side}-{name}",
        )
    return suite


FAILED_FILES = ("failed", 900, "0.0120", [("files_changed", "report.md is outside files_changed ([])")])


@pytest.fixture
def plans(monkeypatch):
    """The suites' plans (the services' own tests cover how they are made)."""
    asked = []

    def plan(*, target=None, side="main", change=None, **kwargs):
        asked.append((target, side, change.pk if change else None))
        return SuitePlan(target=target, side=side, commit_sha="", recipe_text="", budget_tokens=40_000_000)

    monkeypatch.setattr(services, "suite_plan", plan)
    return asked
