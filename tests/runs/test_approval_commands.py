"""Approvals of commands (SPEC §11): `approve: [bash]` holds every command, `bash(git push:*)`
the commands that start so, however the command line wraps them; the approval shows the
exact command."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.coding_tools import command_subjects
from runs.approvals import gate, gate_call
from runs.models import Approval, ApprovalState
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import git
from tests.runs.test_approvals import Person
from tests.workspaces.conftest import RECIPE, code_repo, write_recipe  # noqa: F401 (fixture)


def held(patterns, command):
    return gate_call(patterns, [("bash", command_subjects(command))])


@pytest.mark.parametrize(
    "command",
    [
        "git push origin main",
        "git push",
        "  git   push --force",
        "cd pkg && git push",
        "make test; git push origin x",
        "FOO=1 git push",
        "env GIT_SSH=x nice git push",
        "true || git push",
        "echo $(git push)",
        "bash -c 'git push origin main'",
        'sh -c "cd x && git push"',
        "git status | cat\ngit push",
    ],
)
def test_it_holds_a_prefix_however_the_command_line_wraps_it(command):
    assert held(["bash(git push:*)"], command) is not None


@pytest.mark.parametrize("command", ["git pushy", "git status", "echo git push", "git log --grep push"])
def test_it_lets_other_commands_through(command):
    assert held(["bash(git push:*)"], command) is None


def test_bare_bash_holds_every_command_and_an_exact_pattern_only_that_command():
    assert held(["bash"], "ls") == ("bash", "")
    assert held(["bash(make deploy)"], "make deploy")[0] == "bash(make deploy)"
    assert held(["bash(make deploy)"], "make deploy-docs") is None
    # the old `tool:glob` form still works for every tool, the new one never matches another tool
    assert gate(["bash(git push:*)"], "edit", ["git push"]) is None
    assert gate(["save_result:*.md"], "save_result", ["notes.md"]) == ("save_result:*.md", "notes.md")


@given(st.text(alphabet=st.sampled_from(list("ab ;&|()$`'\"\n-=")), max_size=40))
def test_a_pushing_command_after_any_prefix_of_shell_noise_is_held(noise):
    """Whatever comes before `; git push`, the push is held (a separator always starts anew)."""
    assert held(["bash(git push:*)"], f"{noise}; git push") is not None


GATED = RECIPE.replace('workdir: "{workdir}"', 'workdir: "{workdir}"\n    approve: ["bash(git push:*)"]')


@pytest.mark.django_db(transaction=True)
def test_a_gated_command_waits_for_a_person_who_sees_the_exact_command(code_repo):
    from runs import services

    path = write_recipe(code_repo, workdir="pkg", name="gated", text=GATED)
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "gated")
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    model = FakeModel(
        task=[
            {"text": "ls", "tools": [tool("bash", command="ls")]},
            {"text": "push", "tools": [tool("bash", command="cd .. && git push origin HEAD")]},
            {"text": "Done."},
        ]
    )
    person = Person(approved=False, reason="no pushing from a run")
    person.start()
    run = drive(run, model)
    person.join(10)
    approval = Approval.objects.get(run=run)
    assert approval.state == ApprovalState.REJECTED
    assert approval.tool_input == {"command": "cd .. && git push origin HEAD"}
    assert "git push origin HEAD" in approval.action_text
    steps = run.passes.get().steps.order_by("number")
    assert "exit status: 0" in steps[0].tool_results[0]["content"]  # ls needed nobody
    assert steps[1].tool_results[0]["content"].startswith("not done: a person rejected this action")
