"""`bash.deny` in `.rysh/policy.yaml` (docs/policy.md): a command the model asks for that a deny
rule holds is refused with a tool error naming the rule and the file, never run (the file it
would have made is not there), and the run goes on; `approval.always_gate` holds a command the
recipe's `approve:` does not name."""

import pytest

from catalogue.sync import recipes_sync
from runs.models import Approval, ApprovalState, RunEvent
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import git
from tests.runs.test_approvals import Person
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)

POLICY = """\
bash:
  deny:
    - "touch denied.txt"
    - "rm -rf:*"
approval:
  always_gate: ["bash(git push:*)"]
"""


def with_policy(repo, text=POLICY):
    (repo / ".rysh/policy.yaml").write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "policy")
    recipes_sync()


def start(repo):
    from runs import services

    path = repo / ".rysh/automations/tasks/fix.md"
    return services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")


def tree(run):
    from pathlib import Path

    return Path(run.workspace.home) / "tree/pkg"


@pytest.mark.django_db(transaction=True)
def test_a_denied_command_is_refused_never_run_and_the_run_goes_on(code_repo):  # noqa: F811
    with_policy(code_repo)
    run = start(code_repo)
    model = FakeModel(
        task=[
            {"text": "try", "tools": [tool("bash", command="nice touch denied.txt")]},
            {"text": "again", "tools": [tool("bash", command="touch allowed.txt")]},
            {"text": "Done."},
        ]
    )
    run = drive(run, model)
    assert run.state == "finished", run.cause
    assert not (tree(run) / "denied.txt").exists()  # the denied command never ran
    assert (tree(run) / "allowed.txt").exists()  # the one after it did: the run went on
    steps = run.passes.first().steps.order_by("number")
    refused = steps[0].tool_results[0]
    assert refused["is_error"] is True
    assert refused["content"].startswith("refused by policy: bash(touch denied.txt) in .rysh/policy.yaml:3 bash.deny")
    event = RunEvent.objects.get(run=run, message__startswith="policy refused bash")
    assert ".rysh/policy.yaml:3 bash.deny" in event.message and "touch denied.txt" in event.message
    assert run.policy["deny"][0] == ["bash(touch denied.txt)", ".rysh/policy.yaml:3 bash.deny"]


@pytest.mark.django_db(transaction=True)
def test_always_gate_holds_a_command_the_recipe_does_not_name(code_repo):  # noqa: F811
    with_policy(code_repo)
    run = start(code_repo)
    model = FakeModel(
        task=[{"text": "push", "tools": [tool("bash", command="git push origin HEAD")]}, {"text": "Done."}]
    )
    person = Person(approved=False, reason="not from a run")
    person.start()
    run = drive(run, model)
    person.join(10)
    approval = Approval.objects.get(run=run)
    assert approval.state == ApprovalState.REJECTED
    assert approval.pattern == "bash(git push:*) (policy .rysh/policy.yaml:6 approval.always_gate)"
    assert "git push origin HEAD" in approval.subject
