"""`auto <kind> fork NAME --run ID --pass N …` and `auto <kind> compare A [B] [--json]` (in-process).

The plan and the start go through runs.forks (fork_plan, run_fork) and the comparison through
runs.forks.compare.runs_compare; here they are stand-ins that record what the command asked, so these
tests are about the command line: what it reads, prints, refuses and how it exits. The real
ones are driven end to end in tests/forks/test_fork_front_doors_e2e.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given
from hypothesis import strategies as st

from runs import forks, services
from runs.forks import compare
from runs.forks.shown import as_data, table
from runs.models import Run
from tests.conftest import drive
from tests.fake_model import FakeModel

pytestmark = pytest.mark.django_db

RECIPE = """
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


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def parent(recipe_file):
    path = recipe_file(RECIPE, "job")
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    return drive(run, FakeModel(judge=["NO\nnot yet", "NO\nnot yet", "NO\nnot yet"]))


@dataclass
class Asked:
    plans: list = field(default_factory=list)
    forks: list = field(default_factory=list)


@pytest.fixture
def stand_ins(monkeypatch, recipe_file):
    """fork_plan and run_fork as stand-ins: the plan names what was asked; the fork is a run of
    the same recipe with its lineage set (queued, or finished when `finish` is set)."""
    asked = Asked()
    asked.finish = None

    def plan(*, run, pass_number, redo=False, edits=None, target=None):
        asked.plans.append(dict(run=run, pass_number=pass_number, redo=redo, edits=edits))
        if edits and edits.budget == "1t":
            raise forks.ForkRefused("budget: 1t is below what one step needs (4,096 tokens)", field="budget")
        start = pass_number - 1 if redo else pass_number
        return forks.ForkPlan(
            parent=run,
            from_pass=start,
            redo=redo,
            recipe_text="---\n---\nSave a note.",
            worst_tokens=60_000,
            parent_spent_tokens=1_234,
            notes=["the recipe's file changed since: the parent's version is used"],
            lines=[],
        )

    def fork(*, run, pass_number, user, redo=False, edits=None, provider=None, target=None):
        asked.forks.append(dict(run=run, pass_number=pass_number, redo=redo, edits=edits, provider=provider))
        path = recipe_file(RECIPE, "job")
        new = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
        Run.objects.filter(pk=new.pk).update(forked_from=run, fork_pass=pass_number, fork_edits=edits.edited())
        new.refresh_from_db()
        if asked.finish:
            new = drive(new, asked.finish)
        return new

    monkeypatch.setattr(forks, "fork_plan", plan)
    monkeypatch.setattr(forks, "run_fork", fork)
    return asked


def test_it_prints_the_plan_first_then_starts_the_fork_with_the_edits(parent, stand_ins, tmp_path):
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Save a better note.\n")
    out = auto(
        "task", "fork", "job", "--run", f"#{parent.pk}", "--pass", "2", "--prompt-file", str(prompt),
        "--until", "The better note is saved.", "--budget", "30p", "--model", "claude-sonnet-4-5",
        "--effort", "low", "--iterate-with", "Try again.", "--provider", "scripted",
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0] == f"fork of run #{parent.pk} (task/job) from the end of pass 2; it goes on with pass 3"
    assert lines[1] == "worst case of the fork: 60,000 tokens"
    assert lines[2] == "the parent spent up to there: 1,234 tokens (not paid again)"
    assert "note: the recipe's file changed since: the parent's version is used" in lines
    new = Run.objects.exclude(pk=parent.pk).get()
    assert any(line.startswith(f"run #{new.pk} queued: task/job") for line in lines)
    assert lines.index(next(x for x in lines if x.startswith("note: "))) < lines.index(
        next(x for x in lines if "queued" in x)
    )
    assert lines[-1] == f"forked from run #{parent.pk} at pass 2"
    edits = stand_ins.forks[0]["edits"]
    assert edits == forks.ForkEdits(
        prompt="Save a better note.\n",
        iterate_with="Try again.",
        until="The better note is saved.",
        model="claude-sonnet-4-5",
        effort="low",
        budget="30p",
    )
    assert stand_ins.forks[0]["run"] == parent and stand_ins.forks[0]["provider"] == "scripted"


def test_left_out_edits_stay_the_parents_and_redo_starts_from_the_pass_before(parent, stand_ins):
    out = auto("task", "fork", "job", "--pass", "2", "--redo", "--dry-run")
    assert out.splitlines()[0] == f"redo pass 2 of run #{parent.pk} (task/job): starts from the end of pass 1"
    assert out.splitlines()[-1] == "dry run: nothing was started"
    assert stand_ins.plans[0]["run"] == parent and stand_ins.plans[0]["redo"] is True
    assert stand_ins.plans[0]["edits"].edited() == {}
    assert not stand_ins.forks and Run.objects.count() == 1


def test_a_refusal_names_the_option_and_starts_nothing(parent, stand_ins):
    with pytest.raises(CommandError, match=r"^--budget: 1t is below what one step needs"):
        auto("task", "fork", "job", "--pass", "2", "--budget", "1t")
    with pytest.raises(CommandError, match="needs --pass N"):
        auto("task", "fork", "job")
    with pytest.raises(CommandError, match="no web run #"):
        auto("web", "fork", "--run", str(parent.pk), "--pass", "1")
    with pytest.raises(CommandError, match="cannot read --prompt-file /nonexistent/p.md"):
        auto("task", "fork", "job", "--pass", "1", "--prompt-file", "/nonexistent/p.md")
    assert not stand_ins.forks and Run.objects.count() == 1


def test_wait_follows_the_fork_and_exits_as_run_wait_does(parent, stand_ins, capsys):
    stand_ins.finish = FakeModel(judge=["YES\nsaved"])
    out = StringIO()
    with pytest.raises(SystemExit) as ended:
        call_command("auto", "task", "fork", "job", "--pass", "2", "--wait", stdout=out)
    assert ended.value.code == 0
    new = Run.objects.exclude(pk=parent.pk).get()
    assert f"run #{new.pk} finished: fulfilled" in out.getvalue()


@dataclass
class PassRow:
    number: int
    verdict_a: str
    verdict_b: str
    tokens_a: int
    tokens_b: int


@dataclass
class Comparison:
    a: Run
    b: Run
    passes: list[PassRow]
    cost_a: Decimal | None
    prompt_diff: str


@pytest.fixture
def compared(monkeypatch):
    seen = []

    def stand_in(a, b):
        seen.append((a.pk, b.pk))
        rows = [PassRow(1, "NO", "NO", 100, 0), PassRow(2, "NO", "NO", 120, 0), PassRow(3, "NO", "YES", 90, 80)]
        return Comparison(a=a, b=b, passes=rows, cost_a=Decimal("0.0123"), prompt_diff="-Save a note.\n+Save it.")

    monkeypatch.setattr(compare, "runs_compare", stand_in)
    return seen


def test_compare_defaults_to_the_forks_parent_and_prints_the_table(parent, stand_ins, compared):
    auto("task", "fork", "job", "--pass", "2", "--provider", "scripted")
    fork = Run.objects.exclude(pk=parent.pk).get()
    out = auto("task", "compare", f"#{fork.pk}")
    assert compared == [(fork.pk, parent.pk)]
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "verdict a" in line)
    assert lines[header].split() == ["number", "verdict", "a", "verdict", "b", "tokens", "a", "tokens", "b"]
    assert lines[header + 3].split() == ["3", "NO", "YES", "90", "80"]
    assert f"a: run #{fork.pk} (task/job)" in lines and "prompt diff:" in lines and "  +Save it." in lines
    data = json.loads(auto("task", "compare", str(parent.pk), str(fork.pk), "--json"))
    assert data["a"]["id"] == parent.pk and data["b"]["id"] == fork.pk
    assert data["passes"][2] == {"number": 3, "verdict_a": "NO", "verdict_b": "YES", "tokens_a": 90, "tokens_b": 80}
    assert data["cost_a"] == "0.0123"


def test_compare_refuses_a_run_that_is_no_fork_alone_and_runs_of_two_recipes(parent, recipe_file, compared):
    with pytest.raises(CommandError, match=f"run #{parent.pk} is not a fork: name the run to compare it with"):
        auto("task", "compare", str(parent.pk))
    other = services.run_start(
        kind="task", name_or_path=str(recipe_file(RECIPE, "other")), args=[], provider="scripted"
    )
    with pytest.raises(CommandError, match="is of task/job and run #.* of task/other: compare two runs of one"):
        auto("task", "compare", str(parent.pk), str(other.pk))
    with pytest.raises(CommandError, match="takes two runs, got 3"):
        auto("task", "compare", str(parent.pk), str(other.pk), "7")
    assert compared == []


def test_compare_of_two_real_runs_prints_passes_results_diffs_and_prompt_edits(parent, recipe_file):
    """The real runs_compare: two runs of the recipe, the second with one more pass fulfilled."""
    path = recipe_file(RECIPE.replace("Save a note.", "Save a short note."), "job")
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    other = drive(run, FakeModel(judge=["NO\nnot yet", "YES\nsaved"]))
    lines = auto("task", "compare", str(parent.pk), str(other.pk)).splitlines()
    assert lines[0].startswith(f"A: run #{parent.pk} task/job") and lines[1].startswith(f"B: run #{other.pk} task/job")
    header = lines.index("passes:") + 1
    assert lines[header].split()[:4] == ["pass", "A", "A", "tokens"]
    third = lines[header + 3].split()
    assert third[:3] == ["3", "#3", "NO"] and "—" in third  # B ran two passes
    assert lines[header + 2].split()[:3] == ["2", "#2", "NO"] and "#2 YES" in lines[header + 2]
    assert "diff of A: no changes (no working copy)" in lines
    edits = lines[lines.index("prompt edits (A → B):") + 1 :]
    assert "  -Save a note." in edits and "  +Save a short note." in edits
    data = json.loads(auto("task", "compare", str(parent.pk), str(other.pk), "--json"))
    assert [row["position"] for row in data["passes"]] == [1, 2, 3]
    assert data["passes"][1]["b"]["verdict"] == "YES" and data["passes"][2]["b"] is None
    assert {"kind": "add", "text": "Save a short note.", "old": None, "new": 1} in data["prompt_diff"]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.decimals(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(JSONISH)
def test_whatever_a_comparison_holds_becomes_json(value):
    assert json.loads(json.dumps(as_data(value))) == as_data(value)


@given(st.lists(st.dictionaries(st.sampled_from(["pass", "verdict", "tokens"]), st.integers()), min_size=1))
def test_a_table_has_a_header_and_a_line_per_row_its_columns_aligned(rows):
    lines = table(rows)
    assert len(lines) == len(rows) + 1
    keys = list(dict.fromkeys(k for row in rows for k in row))
    assert lines[0].split() == keys
