"""The suite's ceiling (docs/evals.md, "The suite's ceiling"): what the ledger counts for a suite
(its runs and its rubric calls) never exceeds its budget_tokens, nor what the fake Messages server
billed; a suite that does not fit what a quota leaves is refused before it starts, with the
numbers; a case ended by its budget ends the suite as `ceiling` (exit 3)."""

import random
import textwrap

import pytest
from django.db.models import Sum
from hypothesis import given, settings
from hypothesis import strategies as st

from budgets.guard import input_bound
from catalogue.sync import recipes_sync
from evals.grading import Evidence
from evals.local import suite_drive_here
from evals.models import CaseState, Suite, SuiteState
from evals.rubric import RUBRIC_MAX_TOKENS, RUBRIC_SYSTEM, rubric_bound, rubric_messages, rubric_worst
from evals.services import SuiteRefused, suite_exit_code, suite_plan, suite_start
from runs.models import LedgerEntry, Run
from spend.services import quota_set
from tests.evals.suites_setup import case_files, commit, recipes, script  # noqa: F401
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import make_user

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = """
    ---
    loop:
      do:
        max_iterations: 30
        budget:
          size: {size}p
    ---
    Write notes about the task into {{{{output_dir}}}}/notes.md with save_result, step by step.
"""


def save(n: int) -> dict:
    return {"text": "saving", "tool_calls": [{"name": "save_result", "input": {"filename": "notes.md", "content": n}}]}


def write_notes(repo, *, size: int, cases: dict, name: str = "notes") -> None:
    folder = repo / ".rysh/automations/tasks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(textwrap.dedent(NOTES.format(size=size)).lstrip())
    for relative, content in cases.items():
        path = folder / name / "evals" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def random_suite(rng: random.Random, index: int) -> tuple[int, dict, dict]:
    size = rng.randint(1, 4)
    cases, turns = {}, {}
    for k in range(rng.randint(1, 3)):
        name = f"c{index}x{k}"
        until = "---\nuntil: the notes are complete\n---\n" if rng.random() < 0.5 else ""
        judge = "The notes say something.\n" if rng.random() < 0.5 else None
        cases.update(
            case_files(
                name,
                task=f"{until}[case {name}] Write notes.\n",
                expect=f"max_tokens: {rng.randint(500, 20_000)}\n",
                judge=judge,
                files=False,
            )
        )
        # each step saves a few KB: the per-pass budget binds sooner or later
        steps = [save("n" * rng.randint(2_000, 12_000)) for _ in range(rng.randint(1, 12))]
        turns[name] = steps + ([{"text": "Done."}] if rng.random() < 0.3 else [])  # else: saves until stopped
    return size, cases, turns


def test_many_small_suites_never_count_more_than_their_ceiling(fake_anthropic, recipes):
    rng = random.Random(36)
    for index in range(6):
        size, cases, turns = random_suite(rng, index)
        name = f"notes{index}"
        write_notes(recipes, size=size, cases=cases, name=name)
        commit(recipes, name)
        recipes_sync()
        script(fake_anthropic, turns=turns, verdict=rng.choice(["YES\nfine", "NO\nnot yet"]))
        billed_before = len(fake_anthropic.exchanges)
        suite = suite_drive_here(suite_start(user=None, target=f"task/{name}"))
        assert suite.state in (SuiteState.DONE, SuiteState.CEILING)
        runs = [c.run_id for c in suite.cases.all()]
        counted = LedgerEntry.objects.filter(run_id__in=runs).aggregate(t=Sum("counted_tokens"))["t"] or 0
        billed = sum(e.billed for e in list(fake_anthropic.exchanges)[billed_before:])
        assert suite.tokens_counted == counted <= suite.budget_tokens, (index, counted, suite.budget_tokens)
        assert billed <= suite.budget_tokens
        for case in suite.cases.all():
            assert case.state in (CaseState.PASSED, CaseState.FAILED), (case.name, case.cause)
            assert case.tokens <= case.worst_tokens


def test_a_suite_that_does_not_fit_a_quota_is_refused_with_the_numbers(fake_anthropic, recipes):
    editor = make_user("ed", "editor")
    plan = suite_plan(target="task/fix")
    quota_set(scope="user", window="day", tokens=plan.budget_tokens - 1, dollars=None, user=editor)
    before = len(fake_anthropic.requests)
    with pytest.raises(SuiteRefused) as refused:
        suite_start(user=editor, target="task/fix")
    said = str(refused.value)
    assert f"suite worst case {plan.budget_tokens:,} tokens" in said
    assert f"leaves {plan.budget_tokens - 1:,} tokens" in said and "nothing was started" in said
    assert not Suite.objects.exists() and not Run.objects.exists() and len(fake_anthropic.requests) == before
    # a recipe quota counts too; with room for the whole ceiling the suite starts
    quota_set(scope="user", window="day", tokens=plan.budget_tokens, dollars=None, user=editor)
    quota_set(scope="recipe", window="day", tokens=1000, dollars=None, target="task/fix")
    with pytest.raises(SuiteRefused, match="leaves 1,000 tokens"):
        suite_start(user=editor, target="task/fix")
    quota_set(scope="recipe", window="day", tokens=plan.budget_tokens, dollars=None, target="task/fix")
    assert suite_start(user=editor, target="task/fix").state == SuiteState.RUNNING


def test_a_case_ended_by_its_budget_ends_the_suite_at_its_ceiling(fake_anthropic, recipes):
    write_notes(
        recipes,
        size=2,
        cases=case_files("long", task="[case long] Write notes.\n", expect="max_tokens: 100000\n", files=False),
    )
    commit(recipes, "a small budget")
    recipes_sync()
    script(fake_anthropic, turns={"long": [save("n" * 3_000)]})  # it saves until its budget stops it
    suite = suite_drive_here(suite_start(user=None, target="task/notes"))
    assert suite.state == SuiteState.CEILING
    assert suite_exit_code(suite) == 3
    assert suite.tokens_counted <= suite.budget_tokens


evidence_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=3_000)


@settings(max_examples=60, deadline=None)
@given(
    rubric=st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=2_000),
    files=st.lists(st.text(max_size=200), max_size=30),
    commands=st.lists(evidence_text, max_size=20),
    answer=evidence_text,
    results=st.dictionaries(st.text(max_size=40), evidence_text, max_size=25),
)
def test_the_rubric_request_never_exceeds_the_bound_its_case_was_planned_with(rubric, files, commands, answer, results):
    evidence = Evidence(tuple(files), tuple(commands), answer, results, 0)
    messages = rubric_messages(rubric, evidence)
    assert input_bound(system=RUBRIC_SYSTEM, tools=[], messages=messages, last=None) <= rubric_bound(rubric)
    assert rubric_worst(rubric) == rubric_bound(rubric) + RUBRIC_MAX_TOKENS and rubric_worst(None) == 0
    # what the judge reads: the rubric whole, the evidence's blocks closed by none of its own text
    text = messages[0]["content"][0]["text"]
    assert text.count("</goal>") == 1 and text.count("<changed_files>") <= 1
