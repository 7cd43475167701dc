"""A grant (docs/spend.md) never lifts a run past its policy (docs/policy.md): more tokens than
the policy's run ceiling allows are refused naming the rule, and the granted plan keeps the
policy's lowered pass budget."""

import pytest

from budgets.plan import Grant as PlanGrant
from budgets.units import PAGE
from catalogue.sync import recipes_sync
from runs import services
from tests.conftest import SCRIPT, drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import work  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

LOOP = """---
loop:
  do:
    max_iterations: 30
    budget:
      size: 40p
  while:
    max_iterations: 2
    budget: 90p
    prompts:
      until: The list has five entries.
---
Compile a list.
"""
POLICY = "budget:\n  ceilings:\n    pass: 30p\n    run: 100p\n"


def test_a_grant_stays_under_the_policys_ceilings(work, settings, tmp_path):
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    work.commit("List", tasks__list=LOOP)
    (work.path / ".rysh/automations/tasks/list.script.yaml").write_text(SCRIPT)
    (work.path / ".rysh/policy.yaml").write_text(POLICY)
    work.commit("policy")
    recipes_sync()
    run = services.run_start(kind="task", name_or_path="list", args=[], provider="scripted")
    assert run.plan["per_pass"]["tokens"] == 30 * PAGE and run.plan["outer_tokens"] == 90 * PAGE
    save = tool("save_result", filename="list.md", content="entry " * 20)
    run = drive(run, FakeModel(task=[{"text": "s", "tools": [save]}, {"text": "Done."}], judge=["NO\nthree"] * 2))
    assert run.cause == "unfulfilled: the 2-pass cap is reached"
    with pytest.raises(services.RunRefused, match=r"policy's run ceiling \(.rysh/policy.yaml:4 budget.ceilings.run\)"):
        services.run_grant(run=run, extra=PlanGrant(passes=1, tokens=20 * PAGE))
    services.run_grant(run=run, extra=PlanGrant(passes=1, tokens=10 * PAGE))
    run.refresh_from_db()
    assert run.plan["passes"] == 3 and run.plan["outer_tokens"] == 100 * PAGE
    assert run.plan["per_pass"]["tokens"] == 30 * PAGE  # the policy's pass ceiling still holds
