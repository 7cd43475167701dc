"""A suite of a coding recipe's two cases, end to end: real runs on the real anthropic SDK against
the fake Messages server, in the bubblewrap sandbox, each in a working copy made from its case's
files/, graded against what the run did (docs/evals.md, "Running a suite")."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db.models import Sum

from audit.models import AuditEntry
from evals.local import suite_drive_here
from evals.models import CaseState, SuiteState
from evals.planning import change_recipe_path
from evals.services import SuiteRefused, change_suites_start, suite_exit_code, suite_plan, suite_start
from evals.signals import eval_failed, suite_finished
from reviews.services import change_request_open
from runs import services
from runs.models import LedgerEntry, Run
from tests.evals.suites_setup import case_files, commit, recipes, script, two_cases, write_recipe  # noqa: F401
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def heard():
    said = []

    def listen(signal):
        def receiver(sender, suite, **kwargs):
            said.append((signal, suite.pk))

        return receiver

    finished, failed = listen("finished"), listen("failed")
    suite_finished.connect(finished, weak=False)
    eval_failed.connect(failed, weak=False)
    yield said
    suite_finished.disconnect(finished)
    eval_failed.disconnect(failed)


def test_it_shows_the_plan_with_each_cases_worst_case_and_the_ceiling(recipes):
    plan = suite_plan(target="task/fix")
    assert [p.case.name for p in plan.cases] == ["bad", "good"]
    good = next(p for p in plan.cases if p.case.name == "good")
    bad = next(p for p in plan.cases if p.case.name == "bad")
    assert good.rubric_tokens > 0 and bad.rubric_tokens == 0  # only good has a judge.md
    assert good.worst_tokens == good.run_tokens + good.rubric_tokens
    # good's until arms a judge for its run: its run's worst case is more than bad's
    assert good.run_tokens > bad.run_tokens
    assert plan.budget_tokens == good.worst_tokens + bad.worst_tokens
    assert plan.lines[0].startswith("suite of task/fix (main at ")
    assert any(line.startswith("  good: worst case ") for line in plan.lines)
    assert plan.lines[-1].startswith(f"ceiling: {plan.budget_tokens:,} tokens")


def test_a_suite_on_main_passes_one_case_and_fails_the_other_naming_the_file(fake_anthropic, recipes, heard):
    script(fake_anthropic)
    editor = make_user("ed", "editor")
    suite = suite_start(user=editor, target="task/fix")
    assert suite.state == SuiteState.RUNNING and suite.budget_tokens > 0
    runs = {c.name: c.run for c in suite.cases.all()}
    assert runs["good"].slot == f"eval/{suite.pk}/good" and runs["bad"].slot == f"eval/{suite.pk}/bad"
    # eval runs neither block nor are blocked by the recipe's ordinary runs
    ordinary = services.run_start(kind="task", name_or_path="fix", args=[], provider="anthropic")
    assert ordinary.slot != runs["good"].slot
    Run.objects.filter(pk=ordinary.pk).delete()

    suite = suite_drive_here(suite)

    cases = {c.name: c for c in suite.cases.select_related("run")}
    good, bad = cases["good"], cases["bad"]
    assert good.state == CaseState.PASSED, (good.failures, good.cause)
    assert good.rubric_verdict == "YES" and good.run.cause == "fulfilled"  # its until: was the goal
    assert bad.state == CaseState.FAILED
    assert [f["assertion"] for f in bad.failures] == ["files_changed"]
    assert "test_calc.py" in bad.failures[0]["message"]
    # the task was the case's, after the recipe's prompt; its copy came from files/ (not the repository)
    first = fake_anthropic.requests[0].json
    assert "Fix the failing test in" in str(first) and "The task of this case:" in str(first)
    assert Path(good.run.output_dir).parts[-3:] == ("evals", f"suite-{suite.pk}", "good")
    assert not (recipes / "calc.py").exists()
    # spend: each case's is its run's ledger (the rubric call on it too), the suite's their sum
    assert LedgerEntry.objects.filter(run=good.run, purpose="rubric").count() == 1
    for case in (good, bad):
        assert case.tokens == LedgerEntry.objects.filter(run=case.run).aggregate(t=Sum("counted_tokens"))["t"]
    assert suite.tokens_counted == good.tokens + bad.tokens <= suite.budget_tokens
    assert suite.state == SuiteState.DONE and suite.ended_at and suite.graded_at
    assert suite_exit_code(suite) == 1
    assert heard == [("finished", suite.pk), ("failed", suite.pk)]
    assert AuditEntry.objects.filter(action="eval.start", target_id=str(suite.pk)).exists()
    assert "eval: case good of suite" in " ".join(good.run.events.values_list("message", flat=True))


def test_a_broken_case_is_listed_and_the_others_run(fake_anthropic, recipes):
    script(fake_anthropic)
    write_recipe(
        recipes,
        {
            "nothing/task.md": "no expect.yaml here\n",
            **case_files("stray", task="---\nargs: {topic: x}\n---\n[case good] go\n", expect="max_tokens: 5\n"),
        },
    )
    commit(recipes, "more cases")
    plan = suite_plan(target="task/fix")
    broken = {c.name: "; ".join(str(e) for e in c.errors) for c in plan.broken}
    assert "nothing/expect.yaml" in broken["nothing"] and "missing" in broken["nothing"]
    assert "has no argument 'topic'" in broken["stray"]  # a placeholder the recipe lacks
    suite = suite_drive_here(suite_start(user=None, target="task/fix"))
    states = dict(suite.cases.values_list("name", "state"))
    assert states == {"bad": "failed", "good": "passed", "nothing": "broken", "stray": "broken"}
    assert "missing" in suite.cases.get(name="nothing").cause


def test_a_viewer_or_operator_may_not_start_a_suite(recipes):
    for role in ("viewer", "operator"):
        with pytest.raises(SuiteRefused, match="only editors and admins"):
            suite_start(user=make_user(role, role), target="task/fix")


def test_a_case_that_does_not_exist_is_refused_naming_the_cases(recipes):
    with pytest.raises(SuiteRefused, match=r"task/fix has no case 'nope' \(its cases: bad, good\)"):
        suite_plan(target="task/fix", case="nope")


def test_a_change_runs_its_cases_on_main_and_on_the_change_side_by_side(fake_anthropic, recipes):
    script(fake_anthropic)
    editor = make_user("ed", "editor")
    text = (recipes / ".rysh/automations/tasks/fix.md").read_text()
    change = change_request_open(
        user=editor, kind="task", name="fix", text=text.replace("never the test", "NEVER the test"), message="caps"
    )
    main, proposed = change_suites_start(change=change, user=editor)
    assert (main.side, proposed.side) == ("main", "change")
    assert proposed.commit_sha == change.head_sha != main.commit_sha
    assert "NEVER the test" in proposed.recipe_text and "NEVER" not in main.recipe_text
    assert main.change_request == proposed.change_request == change
    for suite in (main, proposed):
        suite = suite_drive_here(suite)
        assert dict(suite.cases.values_list("name", "state")) == {"bad": "failed", "good": "passed"}
    change_run = proposed.cases.get(name="good").run
    assert "NEVER the test" in change_run.recipe_text


def test_a_change_to_a_cases_file_is_about_the_recipe_beside_its_evals_folder():
    change = SimpleNamespace(new_path=".rysh/automations/tasks/fix/evals/good/expect.yaml", path="")
    assert change_recipe_path(change) == ".rysh/automations/tasks/fix.md"
    change = SimpleNamespace(new_path="", path=".rysh/automations/tasks/fix.md")
    assert change_recipe_path(change) == ".rysh/automations/tasks/fix.md"
