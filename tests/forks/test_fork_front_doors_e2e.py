"""The front doors with the real fork and the real comparison: a coding run fails its judge at
passes 1-3; `auto task fork` prints the real plan and refuses what the service refuses, naming
the option; a fork from pass 2 with an edited prompt started from the command line runs its
passes from 3 and is fulfilled; `auto task compare` and the API's compare show both."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEntry
from budgets.units import format_tokens
from runs.models import Run
from tests.api.conftest import api_as  # noqa: F401 (fixture)
from tests.conftest import drive
from tests.forks.fork_fixtures import four_pass_recipe, per_pass, start_four  # noqa: F401 (fixtures)
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def failed_three(start_four) -> Run:
    return drive(start_four(), per_pass(judge=["NO\nnot yet 1", "NO\nnot yet 2", "NO\nnot yet 3", "NO\nno"]))


def test_a_fork_from_the_command_line_goes_on_from_pass_3_and_compares_with_its_parent(failed_three, tmp_path, api_as):
    parent = failed_three
    assert [p.verdict for p in parent.passes.order_by("number")][:3] == ["NO", "NO", "NO"]
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Make the failing test pass by fixing calc.py only.\n")
    common = ["task", "fork", "four", "--run", str(parent.pk), "--pass", "2", "--prompt-file", str(prompt)]
    dry = auto(*common, "--dry-run").splitlines()
    assert dry[0].startswith(f"fork of run #{parent.pk} (task/four) from pass 2: it starts as pass 2 ended")
    spent = sum(p.tokens_counted for p in parent.passes.filter(number__lte=2))
    assert any(f"spent {format_tokens(spent)} tokens" in line and "not paid again" in line for line in dry), dry
    assert dry[-1] == "dry run: nothing was started" and Run.objects.count() == 1

    out = auto(*common, "--provider", "scripted").splitlines()
    fork = Run.objects.exclude(pk=parent.pk).get()
    assert fork.forked_from == parent and fork.fork_pass == 2
    assert fork.fork_edits == {"prompt": "Make the failing test pass by fixing calc.py only.\n"}
    assert out[-1] == f"forked from run #{parent.pk} at pass 2"
    fork = drive(fork, per_pass(judge=["YES\nfixed"]))
    assert fork.cause == "fulfilled"
    # nothing spent again on passes 1-2: the fork paid for its own pass only
    assert fork.passes.count() == 1 and fork.tokens_counted == fork.passes.get().tokens_counted > 0

    text = auto("task", "compare", str(fork.pk)).splitlines()
    assert text[0].startswith(f"A: run #{fork.pk} task/four") and f"forked from run #{parent.pk} at pass 2" in text[0]
    assert text[1].startswith(f"B: run #{parent.pk} task/four")
    rows = text[text.index("passes:") + 2 :]
    assert rows[0].split()[:2] == ["1", "(kept)"] and rows[1].split()[:2] == ["2", "(kept)"]
    # a fork numbers its passes on from its fork point: its pass 3 beside its parent's pass 3
    assert rows[2].split()[:3] == ["3", "#3", "YES"] and "#3 NO" in rows[2], rows
    edits = text[text.index("prompt edits (A → B):") + 1 :]
    assert "  -Make the failing test pass by fixing calc.py only." in edits

    shown = api_as("viewer", "read").get(f"/api/runs/{parent.pk}/compare/{fork.pk}").json()
    assert shown["a"]["id"] == parent.pk and shown["b"]["id"] == fork.pk
    third = shown["comparison"]["passes"][2]
    assert third["a"]["verdict"] == "NO" and third["b"]["verdict"] == "YES" and third["b"]["number"] == 3
    assert json.loads(auto("task", "compare", str(parent.pk), str(fork.pk), "--json"))["passes"] == json.loads(
        json.dumps(shown["comparison"]["passes"])
    )


def test_the_services_refusals_name_the_option_and_start_nothing(failed_three, api_as):
    parent = failed_three
    with pytest.raises(CommandError, match=rf"^--pass: run #{parent.pk} has no pass 9 to fork from"):
        auto("task", "fork", "four", "--run", str(parent.pk), "--pass", "9")
    with pytest.raises(CommandError, match=r"^--until: "):
        auto("task", "fork", "four", "--run", str(parent.pk), "--pass", "1", "--until", " ")
    with pytest.raises(CommandError, match=r"^--budget: "):
        auto("task", "fork", "four", "--run", str(parent.pk), "--pass", "1", "--budget", "1t")
    with pytest.raises(CommandError, match=rf"^--run: run #{parent.pk} is a run of task/four, not of task/other"):
        auto("task", "fork", "other", "--run", str(parent.pk), "--pass", "1")
    operator = api_as("operator", "operate")
    answer = operator.post(f"/api/runs/{parent.pk}/fork", {"pass": 1, "budget": "1t", "dry_run": True})
    assert answer.status_code == 400 and answer.json()["field"] == "budget"
    answer = operator.post(f"/api/runs/{parent.pk}/fork", {"pass": 2, "dry_run": True})
    assert answer.status_code == 200 and answer.json()["plan"]["from_pass"] == 2
    assert answer.json()["plan"]["passes_left"] == 2
    assert Run.objects.count() == 1


def test_a_fork_through_the_api_is_the_tokens_owners_and_audited_as_a_fork(failed_three, api_as):
    parent = failed_three
    operator = api_as("operator", "operate")
    answer = operator.post(f"/api/runs/{parent.pk}/fork", {"pass": 1, "until": "All green.", "provider": "scripted"})
    assert answer.status_code == 201, answer.content
    fork = Run.objects.get(pk=answer.json()["run"]["id"])
    assert fork.user == operator.owner and fork.forked_from == parent and fork.fork_edits == {"until": "All green."}
    entry = AuditEntry.objects.get(action="run.fork", target_id=str(fork.pk))
    assert entry.actor_name == "operator-user via API token ci" and entry.source == "api"


def test_a_redo_from_the_command_line_starts_from_the_pass_before_and_says_so(failed_three):
    parent = failed_three
    out = auto("task", "fork", "four", "--run", str(parent.pk), "--pass", "3", "--redo", "--model", "claude-x")
    fork = Run.objects.exclude(pk=parent.pk).get()
    assert (fork.fork_pass, fork.fork_redo, fork.fork_edits) == (2, True, {"model": "claude-x"})
    assert out.splitlines()[0].startswith(f"fork of run #{parent.pk} (task/four) redo of pass 3")
    assert out.splitlines()[-1] == f"forked from run #{parent.pk} to redo pass 3"
