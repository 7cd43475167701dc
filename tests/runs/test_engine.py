"""The do/while engine against a fake model port: every rule of docs/running-loops.md."""

from pathlib import Path

import pytest

from runs import ledger, services
from runs.models import Control, LedgerEntry, Pass, Run, RunState, Step, StepStatus
from tests.conftest import ONE_PASS, drive
from tests.fake_model import Failing, FakeModel, tool

pytestmark = pytest.mark.django_db

LOOP = """
    ---
    args: [topic]
    loop:
      do:
        max_iterations: 30
        budget:
          size: 30p
          watch:
            takeover_when: 90
            takeover_prompt: Budget used up. Save what exists, label it PARTIAL.
      while:
        max_iterations: 3
        budget: 90p
        prompts:
          until: The list on {{topic}} has five entries.
          iterate_with: Continue the list on {{topic}}; add only new entries.
    ---
    Compile a list on {{topic}}.
"""

SAVE = tool("save_result", filename="list.md", content="entry " * 20)
BURN = tool("list_results")


def ledger_total(run):
    return sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))


def test_it_runs_one_pass_to_done_and_saves_the_result_and_report(start):
    run = start(ONE_PASS)
    model = FakeModel(
        task=[
            {"text": "saving", "tools": [tool("save_result", filename="summary.md", content="the summary")]},
            {"text": "All saved."},
        ]
    )
    run = drive(run, model)
    assert (run.state, run.cause) == (RunState.FINISHED, "done")
    out = Path(run.output_dir)
    assert (out / "summary.md").read_text() == "the summary"
    report = (out / "run-report.md").read_text()
    assert "- cause: done" in report and "loop enabled=false  maxIter=1" in report
    steps = list(Step.objects.filter(run_pass__run=run))
    assert [s.status for s in steps] == [StepStatus.DONE, StepStatus.DONE]
    assert run.tokens_counted == ledger_total(run) == sum(s.counted_tokens for s in steps) > 0
    assert model.calls == 2  # no judge without a loop


def test_it_lands_through_the_takeover_then_iterates_to_fulfilled(start):
    run = start(LOOP, "agent loops")
    model = FakeModel(
        task=[{"text": "burning", "tools": [SAVE]}, {"text": "more", "tools": [BURN]}],
        wrap_up=[
            {"text": "landing", "tools": [tool("save_result", filename="list.md", content="PARTIAL list")]},
            {"text": "Saved PARTIAL."},
        ],
        judge=["NO\nOnly three entries.", "YES\nFive entries."],
    )
    # pass 2 finishes on its own: switch the task script when pass 2 starts
    original = model.complete

    def complete(request):
        if request.pass_number == 2 and request.purpose == "task":
            model.turns["task"] = [{"text": "Done, five entries."}]
        return original(request)

    model.complete = complete
    run = drive(run, model)
    assert (run.state, run.cause) == (RunState.FINISHED, "fulfilled")
    first, second = Pass.objects.filter(run=run).order_by("number")
    assert (first.task_stop, first.takeover_used, first.wrap_up_stop) == ("tokens", True, "done")
    assert (first.verdict, first.reason) == ("NO", "Only three entries.")
    assert second.verdict == "YES" and second.takeover_used is False
    wrap_texts = [b["text"] for m in first.messages for b in m["content"] if b.get("type") == "text"]
    assert "Budget used up. Save what exists, label it PARTIAL." in wrap_texts
    seed = second.messages[0]["content"][0]["text"]
    assert "PARTIAL list" in seed  # seeded with the artifact, not the transcript
    assert "an independent judge found it not yet complete: only three entries." in seed.lower()
    assert "Continue the list on agent loops; add only new entries." in seed
    assert len(second.messages) == 2  # fresh session: the seed and the answer, not pass 1's transcript
    report = (Path(run.output_dir) / "run-report.md").read_text()
    assert "| 1 | NO | Only three entries. |" in report and "| 2 | YES | Five entries. |" in report


def test_it_never_spends_past_a_leg_or_the_job_even_against_the_worst_model(start):
    run = start(LOOP, "x")
    model = FakeModel(
        task=[{"text": "go", "tools": [BURN]}],
        wrap_up=[{"text": "w", "tools": [BURN]}],
        judge=["NO\nnot yet"] * 3,
        adversarial=True,
    )
    run = drive(run, model)
    plan = run.plan
    assert run.tokens_counted <= plan["outer_tokens"] == 90_000
    for p in Pass.objects.filter(run=run):
        task = sum(s.counted_tokens for s in p.steps.filter(leg="task"))
        wrap = sum(s.counted_tokens for s in p.steps.filter(leg="wrap-up"))
        assert task <= plan["split"]["task"]["tokens"]
        assert wrap <= plan["split"]["takeover"]["tokens"]
    assert run.tokens_counted == ledger_total(run)
    assert run.cause in ("budget exhausted", "unfulfilled: the 3-pass cap is reached")


def test_it_stops_the_task_leg_on_its_step_ceiling(start):
    run = start("""
        ---
        loop:
          do:
            max_iterations: 3
        ---
        Work.
    """)
    run = drive(run, FakeModel(task=[{"text": "again", "tools": [BURN]}]))
    only = Pass.objects.get(run=run)
    assert only.task_stop == "steps" and only.steps.count() == 3
    assert run.cause == "done"  # no loop; without a takeover prompt a budget stop is plain


def test_it_reports_unfulfilled_at_the_pass_cap(start):
    run = start(LOOP.replace("max_iterations: 3", "max_iterations: 2"), "x")
    run = drive(run, FakeModel(task=[{"text": "Done."}], judge=["NO\nnope", "no."]))
    assert run.cause == "unfulfilled: the 2-pass cap is reached"
    assert list(Pass.objects.filter(run=run).values_list("verdict", flat=True)) == ["NO", "NO"]


def test_it_stops_the_loop_on_a_judge_error(start):
    run = start(LOOP, "x")
    run = drive(run, FakeModel(task=[{"text": "Done."}], judge=[Failing("overloaded (529)")]))
    assert run.cause == "judge error: overloaded (529)"


def test_it_ends_with_an_error_cause_when_the_model_fails(start):
    run = start(ONE_PASS)
    run = drive(run, FakeModel(task=[Failing("authentication_error (401): invalid x-api-key")]))
    assert run.state == RunState.FINISHED
    assert run.cause == "error: ModelError: authentication_error (401): invalid x-api-key"
    assert run.tokens_counted == 0  # a refused call is not billed


def test_it_finishes_the_pass_in_flight_on_stop_and_does_not_judge(start):
    run = start(LOOP, "x")

    def stop_on_second_call(request):
        if request.purpose == "task" and len(request.messages) > 1:
            Run.objects.filter(pk=run.pk).update(control=Control.STOP)

    model = FakeModel(
        task=[{"text": "a", "tools": [SAVE]}, {"text": "b", "tools": [SAVE]}, {"text": "Done."}],
        repeat_last=False,
        on_call=stop_on_second_call,
    )
    run = drive(run, model)
    assert run.cause == "stopped by user"
    only = Pass.objects.get(run=run)
    assert only.task_stop == "done" and only.verdict == ""
    assert all(r.purpose != "judging" for r in model.requests)


def test_it_does_not_iterate_after_a_stop_asked_for_while_judging(start):
    run = start(LOOP, "x")

    def stop_while_judging(request):
        if request.purpose == "judging":
            Run.objects.filter(pk=run.pk).update(control=Control.STOP)

    run = drive(run, FakeModel(task=[{"text": "Done."}], judge=["NO\nnot yet"], on_call=stop_while_judging))
    assert run.cause == "stopped by user"
    assert Pass.objects.filter(run=run).count() == 1


def test_it_pauses_on_cancel_mid_call_and_continues_the_same_conversation(start):
    run = start(ONE_PASS)
    cancel_once = {"done": False}

    def cancel_during_second(request):
        if len(request.messages) > 1 and not cancel_once["done"]:
            cancel_once["done"] = True
            Run.objects.filter(pk=run.pk).update(control=Control.CANCEL)

    model = FakeModel(
        task=[{"text": "a", "tools": [SAVE]}, {"text": "b", "tools": [SAVE]}, {"text": "Done."}],
        on_call=cancel_during_second,
        delay=0.7,
    )  # > the 0.5 s control poll
    run = drive(run, model)
    assert (run.state, run.state_label) == (RunState.PAUSED, "paused(cancelled)")
    the_pass = Pass.objects.get(run=run)
    assert len(the_pass.messages) == 3  # the checkpoint: prompt, reply, tool results
    cancelled = Step.objects.get(run_pass=the_pass, status=StepStatus.CANCELLED)
    assert cancelled.counted_tokens == cancelled.reserved_tokens  # unknown cost: counted in full
    counted_before = run.tokens_counted

    services.run_continue(run=run)
    run = drive(run, model)
    assert run.cause == "done"
    the_pass.refresh_from_db()
    assert the_pass.messages[:3] == model.requests[1].messages[:3]  # same conversation
    assert run.tokens_counted > counted_before and run.tokens_counted == ledger_total(run)


def test_it_hands_the_wheel_to_the_takeover_on_land_now(start):
    run = start(LOOP, "x")

    def land_on_second(request):
        if request.purpose == "task" and len(request.messages) == 3:
            Run.objects.filter(pk=run.pk).update(control=Control.LAND)

    model = FakeModel(task=[{"text": "a", "tools": [BURN]}], on_call=land_on_second, judge=["YES\nfine"])
    run = drive(run, model)
    first = Pass.objects.get(run=run, number=1)
    assert first.task_stop == "land now" and first.takeover_used and first.wrap_up_stop == "done"
    assert run.cause == "fulfilled"


def test_it_pauses_at_the_step_cap_without_auto_continue(start):
    run = start("""
        ---
        loop:
          do:
            interval: 2
            auto_continue: false
        ---
        Work.
    """)
    model = FakeModel(
        task=[{"text": "a", "tools": [BURN]}, {"text": "b", "tools": [BURN]}, {"text": "Done."}], repeat_last=False
    )
    run = drive(run, model)
    assert run.state_label == "paused(step cap)"
    reminder = Pass.objects.get(run=run).messages[-1]["content"][-1]["text"]
    assert reminder.startswith("Continue from where you stopped; save all result files into")
    services.run_continue(run=run)
    run = drive(run, model)
    assert run.cause == "done"


def test_it_ends_the_loop_when_its_time_cap_elapses(start):
    run = start(
        LOOP.replace("budget: 90p", "budget: 90p\n        max_duration: 2s").replace(
            "max_iterations: 30", "max_iterations: 30\n        max_duration: 1s"
        ),
        "x",
    )
    run = drive(run, FakeModel(task=[{"text": "Done."}], judge=["NO\nnot yet"], delay=1.1))
    assert run.cause == "the loop's time cap elapsed"


def test_it_settles_a_lost_call_at_its_reservation_once(start):
    run = start(ONE_PASS)
    the_pass = Pass.objects.create(
        run=run, number=1, messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}]
    )
    step = Step.objects.create(run_pass=the_pass, number=1, leg="task", model="m", max_tokens=100, reserved_tokens=1234)
    assert ledger.settle_pending_steps(run) == 1
    assert ledger.settle_pending_steps(run) == 0
    step.refresh_from_db()
    assert (step.status, step.counted_tokens) == (StepStatus.LOST, 1234)
    assert LedgerEntry.objects.get(step=step).estimated is True


def test_it_leaves_a_run_that_is_not_queued_alone(start):
    run = start(ONE_PASS)
    Run.objects.filter(pk=run.pk).update(state=RunState.RUNNING)
    model = FakeModel()
    drive(run, model)
    assert model.calls == 0  # a re-delivered task never runs a pass twice


def test_it_refuses_a_second_active_run_of_the_same_recipe(start):
    first = start(ONE_PASS)
    with pytest.raises(services.RunRefused, match=rf"task/job already has an active run: run #{first.pk} \(queued"):
        start(ONE_PASS)


def test_it_refuses_missing_arguments_before_anything_is_spent(start):
    with pytest.raises(services.RunRefused, match="needs 1 argument"):
        start(LOOP)
    assert Run.objects.count() == 0


def test_it_sends_tool_errors_back_to_the_model(start):
    run = start(ONE_PASS)
    model = FakeModel(
        task=[{"text": "a", "tools": [tool("save_result", filename="../escape.md", content="x")]}, {"text": "Done."}]
    )
    run = drive(run, model)
    assert run.cause == "done"
    result = Step.objects.get(run_pass__run=run, number=1).tool_results[0]
    assert result["is_error"] and "outside the results folder" in result["content"]


def test_it_continues_a_lost_run_from_its_checkpoint_then_pauses_it_after_retries(start, settings):
    settings.RYSH_WORKER_LOST_RETRIES = 1
    run = start(ONE_PASS)
    Run.objects.filter(pk=run.pk).update(state=RunState.RUNNING, heartbeat_at=None)
    assert services.runs_sweep_lost()[0].endswith("continued from its checkpoint")
    run.refresh_from_db()
    assert (run.state, run.lost_count) == (RunState.QUEUED, 1)
    Run.objects.filter(pk=run.pk).update(state=RunState.RUNNING, heartbeat_at=None)
    services.runs_sweep_lost()
    run.refresh_from_db()
    assert (run.state_label, run.lost_count) == ("paused(worker lost)", 2)


def test_it_says_when_there_is_nothing_to_continue(start):
    run = drive(start(ONE_PASS), FakeModel())
    with pytest.raises(services.RunRefused, match="nothing to continue: it finished \\(done\\). Use resume"):
        services.run_continue(run=run)


def test_it_resumes_with_a_fresh_run_seeded_with_the_latest_result(start):
    run = drive(
        start(ONE_PASS),
        FakeModel(
            task=[
                {"text": "a", "tools": [tool("save_result", filename="summary.md", content="v1 summary")]},
                {"text": "Done."},
            ]
        ),
    )
    again = services.run_resume(run=run)
    assert again.resumed_from == run and again.pk != run.pk
    model = FakeModel()
    drive(again, model)
    seed = model.requests[0].messages[0]["content"][0]["text"]
    assert f"This run resumes run #{run.pk}" in seed and "v1 summary" in seed


def test_the_judge_reads_the_goal_with_its_placeholders_filled(start):
    """docs/recipes.md: placeholders are filled in until: too; the judge of a run on "cats" never reads
    "{{topic}}"."""
    run = start(LOOP, "cats")
    model = FakeModel(task=[{"text": "saving", "tools": [SAVE]}, {"text": "Done."}], judge=["YES\nfive"])
    drive(run, model)
    judged = [r for r in model.requests if r.purpose == "judging"]
    text = judged[0].messages[0]["content"][0]["text"]
    assert "The list on cats has five entries." in text and "{{topic}}" not in text
