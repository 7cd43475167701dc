"""Grading a case when its run ends (docs/evals.md): once even when two workers race, the rubric
asked only when its call fits the case's share of the ceiling and the quotas, a paused eval run
ends its case, an errored run lands with its cause, a case lost mid-grade is graded again."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from evals.grade_run import LOST_SECONDS, grade_case
from evals.local import suite_drive_here
from evals.models import CaseResult, CaseState, Suite, SuiteState
from evals.services import suite_regrade, suite_start
from runs import worker
from runs.models import LedgerEntry, Run
from runs.wiring import arm_run
from runs.worker import execute
from spend.services import quota_set
from tests.evals.suites_setup import TURNS, commit, messages_requests, recipes, script  # noqa: F401
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def ran(suite, case="good") -> CaseResult:
    """The case's run executed here; the case left to grade."""
    result = suite.cases.get(name=case)
    execute(result.run_id, arm_run)
    result.refresh_from_db()
    return result


def test_two_workers_grade_a_case_once(fake_anthropic, recipes):
    script(fake_anthropic)
    result = ran(suite_start(user=None, target="task/fix", case="good"))
    assert result.state == CaseState.PENDING and result.run.state == "finished"
    got, gate = [], threading.Barrier(2)

    def worker():
        try:
            gate.wait(5)
            got.append(grade_case(result.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(g is None for g in got) == [False, True]
    assert LedgerEntry.objects.filter(run=result.run, purpose="rubric").count() == 1
    result.refresh_from_db()
    assert result.state == CaseState.PASSED and result.suite.state == SuiteState.DONE


def test_a_rubric_call_that_does_not_fit_the_cases_share_is_never_made(fake_anthropic, recipes):
    script(fake_anthropic)
    result = ran(suite_start(user=None, target="task/fix", case="good"))
    CaseResult.objects.filter(pk=result.pk).update(worst_tokens=result.run.tokens_counted + 300)
    before = len(messages_requests(fake_anthropic))
    result = grade_case(result.pk)
    assert len(messages_requests(fake_anthropic)) == before
    assert result.state == CaseState.FAILED and result.rubric_verdict == ""
    assert [f["assertion"] for f in result.failures] == ["rubric"]
    assert "not asked" in result.failures[0]["message"] and "has 300 left" in result.failures[0]["message"]
    assert not LedgerEntry.objects.filter(purpose="rubric").exists()


def test_a_rubric_call_the_quota_has_no_room_for_is_not_made(fake_anthropic, recipes):
    script(fake_anthropic)
    editor = make_user("ed", "editor")
    result = ran(suite_start(user=editor, target="task/fix", case="good"))
    quota_set(scope="user", window="day", tokens=result.run.tokens_counted + 10, dollars=None, user=editor)
    before = len(messages_requests(fake_anthropic))
    result = grade_case(result.pk)
    assert len(messages_requests(fake_anthropic)) == before
    assert result.state == CaseState.FAILED and "not asked: quota: " in result.failures[0]["message"]


def test_the_rubric_call_is_in_the_ledger_charged_to_the_suites_person(fake_anthropic, recipes):
    script(fake_anthropic)
    editor = make_user("ed", "editor")
    result = grade_case(ran(suite_start(user=editor, target="task/fix", case="good")).pk)
    entry = LedgerEntry.objects.get(purpose="rubric")
    assert entry.run_id == result.run_id and entry.charged_to == editor and entry.model == result.run.judge_model
    rubric = [r for r in messages_requests(fake_anthropic) if "eval case" in str(r.json["system"])]
    assert len(rubric) == 1
    assert "The fix is in calc.py and the test is untouched." in str(rubric[0].json["messages"])
    assert "calc.py" in str(rubric[0].json["messages"])  # the evidence: the changed file
    assert entry.counted_tokens == fake_anthropic.exchanges[-1].billed


def test_an_eval_run_that_pauses_ends_its_case(fake_anthropic, recipes):
    recipe = recipes / ".rysh/automations/tasks/fix.md"
    recipe.write_text(
        recipe.read_text().replace(
            "max_iterations: 10\n", "max_iterations: 10\n    interval: 1\n    auto_continue: false\n"
        )
    )
    commit(recipes, "a step cap after every step")
    script(fake_anthropic)
    suite = suite_start(user=None, target="task/fix", case="bad")
    suite = suite_drive_here(suite)
    result = suite.cases.get()
    assert result.run.state == "finished" and result.run.cause == "eval case ended: paused(step cap)"
    assert result.state == CaseState.FAILED and suite.state == SuiteState.DONE
    assert "eval case ended: paused(step cap)" in result.cause


def test_a_run_that_errors_lands_as_an_error_with_its_cause(fake_anthropic, recipes):
    script(fake_anthropic)
    fake_anthropic.fail_next(400, message="your request is broken", times=20)
    suite = suite_drive_here(suite_start(user=None, target="task/fix", case="bad"))
    result = suite.cases.get()
    assert result.state == CaseState.ERROR and "ended with error" in result.cause
    assert suite.state == SuiteState.DONE


def test_a_case_lost_mid_grade_is_graded_again_by_result(fake_anthropic, recipes):
    script(fake_anthropic, turns={"bad": TURNS["bad"], "good": TURNS["good"]})
    suite = suite_start(user=None, target="task/fix", case="bad")
    result = ran(suite, "bad")
    CaseResult.objects.filter(pk=result.pk).update(state=CaseState.GRADING)  # its worker died here
    assert grade_case(result.pk) is None  # claimed already: the task does not grade it twice
    suite = suite_regrade(suite=suite)
    result.refresh_from_db()
    assert result.state == CaseState.FAILED and "test_calc.py" in result.failures[0]["message"]
    assert suite.state == SuiteState.DONE and suite.graded_at is not None
    assert Run.objects.count() == 1


def test_the_sweeper_grades_again_a_case_whose_grader_was_lost(fake_anthropic, recipes):
    script(fake_anthropic)
    suite = suite_start(user=None, target="task/fix", case="bad")
    result = ran(suite, "bad")
    long_ago = timezone.now() - timedelta(seconds=LOST_SECONDS + 5)
    CaseResult.objects.filter(pk=result.pk).update(state=CaseState.GRADING, ended_at=timezone.now())
    assert worker.sweep_lost_runs() == []  # still within what a grading may take
    CaseResult.objects.filter(pk=result.pk).update(ended_at=long_ago)
    assert f"eval case #{result.pk}: its grading was lost; graded again" in worker.sweep_lost_runs()
    assert grade_case(result.pk).state == CaseState.FAILED
    assert Suite.objects.get().state == SuiteState.DONE
