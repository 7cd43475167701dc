"""A policy applied to every run (docs/policy.md), on a real git recipes repository: a policy
that does not parse refuses every start with its line (page, CLI, API alike), the org's policy
(RYSH_ORG_POLICY) merges strictest-wins, and `budget.ceilings.pass` lowers a run's cap: the
plan and the ledger show the lower number and spend never passes it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from budgets.units import BOOK
from catalogue.sync import recipes_sync
from policies.models import PolicyVersion
from runs import services
from runs.models import LedgerEntry, Pass, Run, RunEvent
from tests.api.conftest import api_as  # noqa: F401 (fixture)
from tests.conftest import SCRIPT, drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import login, make_user, work  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

BIG = """---
loop:
  do:
    max_iterations: 6
    budget:
      size: 3b
  while:
    max_iterations: 2
    prompts:
      until: The list has fifty entries.
---
Work on the list.
"""
CEILINGS = "# the team's guard rails\nbudget:\n  ceilings:\n    pass: 1b\n"
BROKEN = "bash:\n  deny: ['rm -rf:*']\nbudget:\n  ceilings:\n    run: lots\n"


@pytest.fixture
def big(work, settings, tmp_path):
    """A catalogued recipe that asks for 3b a pass, on the scripted provider."""
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    work.commit("Big", tasks__big=BIG)
    (work.path / ".rysh/automations/tasks/big.script.yaml").write_text(SCRIPT)
    return work


def commit_policy(work, text: str) -> None:
    (work.path / ".rysh/policy.yaml").write_text(text)
    work.commit("policy")
    recipes_sync()


def start(**options):
    return services.run_start(kind="task", name_or_path="big", args=[], provider="scripted", **options)


def test_the_sync_stores_the_policy_at_the_commit_it_read(big):
    commit_policy(big, CEILINGS)
    version = PolicyVersion.objects.get()
    assert version.present and version.valid and version.commit_sha == big.head() and version.text == CEILINGS
    commit_policy(big, BROKEN)
    version = PolicyVersion.objects.first()
    assert not version.valid
    assert version.errors == [
        ".rysh/policy.yaml:5 budget.ceilings.run: expected a budget size such as 20p, 4b or 1s "
        "(a bare number means pages), got 'lots'"
    ]


def test_a_policy_that_does_not_parse_refuses_every_start_with_its_line(big, client, api_as):  # noqa: F811
    commit_policy(big, BROKEN)
    line = ".rysh/policy.yaml:5 budget.ceilings.run: expected"
    with pytest.raises(services.RunRefused, match=r"(?s)does not parse, so no run starts.*policy.yaml:5"):
        start()
    with pytest.raises(CommandError) as caught:
        call_command("auto", "task", "run", "big", "--provider", "scripted", stdout=StringIO())
    assert line in str(caught.value)
    answer = api_as("operator", "operate").post("/api/runs", {"kind": "task", "name": "big", "provider": "scripted"})
    assert answer.status_code >= 400 and line in answer.json()["message"]
    page = login(client, make_user("otto", role="operator")).post("/recipes/task/big/run/", {})
    assert page.status_code == 400 and line in page.content.decode()
    assert not Run.objects.exists()
    commit_policy(big, CEILINGS)  # fixed in the repository: runs start again
    assert isinstance(start(), Run)


def test_the_pass_ceiling_lowers_the_plan_and_spend_never_passes_it(big):
    commit_policy(big, CEILINGS)
    dry = start(dry_run=True)
    assert "  note: policy (.rysh/policy.yaml:4 budget.ceilings.pass): pass budget lowered 3b -> 1b" in dry.lines
    assert any(f"perPass: tokens={BOOK}" in line for line in dry.lines)
    run = start()
    assert run.plan["per_pass"]["tokens"] == BOOK and run.plan["split"]["task"]["tokens"] == BOOK
    assert run.policy["notes"] == ["policy (.rysh/policy.yaml:4 budget.ceilings.pass): pass budget lowered 3b -> 1b"]
    calls = [tool("save_result", filename="list.md", content="entry\n" * 200)]
    model = FakeModel(task=[{"text": "working " * 50, "tools": calls}], judge=["NO\nnot yet"] * 3, adversarial=True)
    run = drive(run, model)
    assert run.state == "finished", run.cause
    assert run.tokens_counted == sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))
    passes = list(Pass.objects.filter(run=run))
    assert len(passes) == 2
    for run_pass in passes:
        spent = sum(s.counted_tokens for s in run_pass.steps.filter(leg="task"))
        assert BOOK // 2 < spent <= BOOK  # the model spent up to the lowered cap, never past it
    assert RunEvent.objects.filter(run=run, message__contains="budget.ceilings.pass").exists()


def test_the_org_policy_file_merges_strictest_wins(big, settings, tmp_path):
    commit_policy(big, "budget:\n  ceilings:\n    pass: 2b\n    run: 30b\n")
    org = tmp_path / "org-policy.yaml"
    org.write_text("budget:\n  ceilings:\n    pass: 1b\n    run: 50b\n")
    settings.RYSH_ORG_POLICY = str(org)
    run = start()
    assert run.plan["per_pass"]["tokens"] == BOOK  # the org's lower pass ceiling
    assert run.plan["outer_tokens"] == 30 * BOOK  # the repository's lower run ceiling
    assert run.policy["sources"] == [str(org), ".rysh/policy.yaml"]
    assert run.policy["pass"] == [BOOK, f"{org}:3 budget.ceilings.pass"]
    Run.objects.all().delete()
    org.unlink()  # configured but missing: fail closed
    with pytest.raises(services.RunRefused, match="RYSH_ORG_POLICY is .*which does not exist"):
        start()
    org.write_text("bash:\n  denied: [x]\n")
    with pytest.raises(services.RunRefused, match=r"org-policy.yaml:2 bash.denied: unknown key 'denied'"):
        start()


def test_a_repository_synced_before_policies_existed_has_its_policy_read_at_the_next_start(big):
    commit_policy(big, CEILINGS)
    PolicyVersion.objects.all().delete()  # as on a dashboard upgraded over an already synced repository
    recipes_sync()  # nothing new to sync: the catalogue sends no signal
    assert not PolicyVersion.objects.exists()
    run = start()
    assert run.plan["per_pass"]["tokens"] == BOOK
    assert PolicyVersion.objects.get().commit_sha == big.head()
