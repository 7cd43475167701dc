"""Re-judge (runs/rejudge.py) on the real anthropic SDK against the fake Messages server."""

from decimal import Decimal

import pytest

from budgets.plan import JUDGE_MAX_TOKENS
from runs.models import LedgerEntry, Rejudge, RejudgeState
from runs.workbench import rejudge as rj
from spend.models import Quota, Scope
from spend.services import quota_set
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.runs.rejudge_fixtures import judged_run, label, scripted_verdicts

pytestmark = pytest.mark.django_db
NEW_GOAL = "result.md names at least three sources."


@pytest.fixture
def history(tmp_path):
    """Two finished runs of task/report: four judged passes, R1 the oldest."""
    first = judged_run(tmp_path / "a", [("NO", "R1 draft"), ("YES", "R2 one source")])
    second = judged_run(tmp_path / "b", [("NO", "R3 two sources"), ("YES", "R4 three sources")])
    return first, second


def start(n=10, **options):
    return rj.rejudge_start(
        kind="task", name="report", until=NEW_GOAL, judge_model="claude-haiku-4-5", n=n, enqueue=False, **options
    )


def test_it_rejudges_the_newest_passes_and_counts_flips_and_agreement(fake_anthropic, history):
    first, second = history
    scripted_verdicts(
        fake_anthropic,
        {"R4": "YES\nthree sources", "R3": "NO\ntwo only", "R2": "NO\none source only", "R1": "NO\na draft"},
    )
    label(first, 2, judge_right=False, note="one source is not enough")  # truth: NO; new says NO
    label(second, 2, judge_right=False)  # truth: NO; new says YES -> disagrees
    label(second, 1, judge_right=True)  # truth: NO; new says NO -> agrees
    rejudge = start(n=3)
    assert [i.result_name for i in rejudge.items.all()] == ["result.md"] * 3
    assert [i.run_pass.reason for i in rejudge.items.all()] == ["old reason 2", "old reason 1", "old reason 2"]

    done = rj.rejudge_execute(rejudge.pk)
    assert (done.state, done.cause) == (RejudgeState.FINISHED, "done")
    delta = rj.rejudge_delta(done)
    table = [(r.item.old_verdict, r.item.new_verdict, r.truth, r.agrees) for r in delta.rows]
    assert table == [("YES", "YES", "NO", False), ("NO", "NO", "NO", True), ("YES", "NO", "NO", True)]
    assert [r.item.flipped for r in delta.rows] == [False, False, True]
    assert delta.rows[2].item.new_reason == "one source only"
    assert delta.summary() == (
        "1 of 3 verdicts flip; with people: the new judge agrees on 2, disagrees on 1 (of 3 labelled passes)"
    )
    sent = [r.json for r in fake_anthropic.requests if r.path == "/v1/messages"]
    assert len(sent) == 3 and all(NEW_GOAL in str(body["messages"]) for body in sent)
    assert "R1" not in str(sent)  # only the newest three


def test_it_writes_a_ledger_entry_per_call_with_real_usage_and_cost(fake_anthropic, history):
    scripted_verdicts(fake_anthropic, {"R": "YES\nfine"})
    done = rj.rejudge_execute(start(n=4).pk)
    entries = list(LedgerEntry.objects.filter(rejudge=done))
    billed = [e.billed for e in fake_anthropic.exchanges]
    assert len(entries) == 4 and all(e.run is None and e.purpose == "rejudge" for e in entries)
    assert [e.counted_tokens for e in entries] == billed
    assert done.tokens_counted == sum(billed) <= done.budget_tokens
    assert done.cost == sum(e.cost for e in entries) and done.cost > 0


def test_its_estimate_is_the_byte_bound_plus_the_judges_output_and_is_priced(fake_anthropic, history):
    estimate = rj.rejudge_estimate(
        kind="task", name="report", until=NEW_GOAL, judge_model="claude-haiku-4-5", n=2, provider="anthropic"
    )
    bounds = [rj.judge_bound(NEW_GOAL, c) for c in estimate.candidates]
    assert estimate.worst_tokens == estimate.budget_tokens == sum(bounds) + 2 * JUDGE_MAX_TOKENS
    assert estimate.money is not None and estimate.money > 0
    assert "at most" in estimate.describe() and "$" in estimate.describe()
    unpriced = rj.rejudge_estimate(
        kind="task", name="report", until=NEW_GOAL, judge_model="some-model", n=2, provider="anthropic"
    )
    assert unpriced.money is None and "unpriced" in unpriced.describe()


def test_its_hard_ceiling_leaves_later_passes_not_judged(fake_anthropic, history, settings):
    scripted_verdicts(fake_anthropic, {"R": "NO\nnot yet"})
    estimate = rj.rejudge_estimate(
        kind="task", name="report", until=NEW_GOAL, judge_model="claude-haiku-4-5", n=4, provider="anthropic"
    )
    one = rj.judge_bound(NEW_GOAL, estimate.candidates[0]) + JUDGE_MAX_TOKENS
    settings.RYSH_REJUDGE_MAX_TOKENS = one  # room for one call's worst case (its byte bound), not two
    rejudge = start(n=4)
    assert rejudge.budget_tokens == one
    fake_anthropic.fail_next_count(status=400, times=100)  # no exact count to squeeze in a second call
    done = rj.rejudge_execute(rejudge.pk)
    assert done.cause == "budget exhausted"
    assert [bool(i.new_verdict) for i in done.items.all()] == [True, False, False, False]
    assert 0 < done.tokens_counted <= done.budget_tokens
    assert len([r for r in fake_anthropic.requests if r.path == "/v1/messages"]) == 1


def test_an_exact_count_lets_more_calls_fit_the_same_ceiling(fake_anthropic, history, settings):
    scripted_verdicts(fake_anthropic, {"R": "NO\nnot yet"})
    estimate = rj.rejudge_estimate(
        kind="task", name="report", until=NEW_GOAL, judge_model="claude-haiku-4-5", n=4, provider="anthropic"
    )
    settings.RYSH_REJUDGE_MAX_TOKENS = rj.judge_bound(NEW_GOAL, estimate.candidates[0]) + JUDGE_MAX_TOKENS
    done = rj.rejudge_execute(start(n=4).pk)
    assert sum(1 for i in done.items.all() if i.new_verdict) > 1 and fake_anthropic.count_requests
    assert done.tokens_counted <= done.budget_tokens


def test_it_never_calls_when_the_first_call_does_not_fit(fake_anthropic, history):
    rejudge = start(n=2)
    Rejudge.objects.filter(pk=rejudge.pk).update(budget_tokens=100)
    done = rj.rejudge_execute(rejudge.pk)
    assert (done.cause, done.tokens_counted) == ("budget exhausted", 0)
    assert fake_anthropic.calls == 0 and not LedgerEntry.objects.exists()


def test_a_second_worker_does_not_run_it_again(fake_anthropic, history):
    rejudge = start(n=1)
    assert rj.rejudge_execute(rejudge.pk) is not None
    assert rj.rejudge_execute(rejudge.pk) is None
    assert LedgerEntry.objects.count() == 1


def test_a_judge_error_ends_it_with_that_cause(fake_anthropic, history):
    fake_anthropic.fail_next(status=400, times=5)
    done = rj.rejudge_execute(start(n=2).pk)
    assert done.cause.startswith("judge error: ")
    assert not any(i.new_verdict for i in done.items.all())


def test_it_takes_from_the_quotas_and_stops_when_one_is_full(fake_anthropic, history, django_user_model):
    user = django_user_model.objects.create_user("ada")
    scripted_verdicts(fake_anthropic, {"R": "YES\nok"})
    quota = quota_set(scope=Scope.RECIPE, target="task/report", window="day", tokens=10**6, dollars=None)
    done = rj.rejudge_execute(start(n=2, user=user).pk)
    quota.refresh_from_db()
    assert quota.used_tokens == done.tokens_counted and quota.reserved_tokens == 0
    Quota.objects.filter(pk=quota.pk).update(tokens=quota.used_tokens + 10)
    again = rj.rejudge_execute(start(n=2, user=user).pk)
    assert again.cause.startswith("quota: ") and again.tokens_counted == 0


def test_it_refuses_without_snapshots_or_with_a_bad_n(fake_anthropic, db, settings):
    with pytest.raises(rj.RejudgeRefused, match="no judged pass with a saved result"):
        start(n=3)
    with pytest.raises(rj.RejudgeRefused, match="between 1 and"):
        start(n=settings.RYSH_REJUDGE_MAX_PASSES + 1)


def test_it_queues_a_worker_task_after_commit(fake_anthropic, history, monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(rj, "async_task", lambda *args, **kw: queued.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        rejudge = rj.rejudge_start(kind="task", name="report", until=NEW_GOAL, judge_model="claude-haiku-4-5", n=1)
        assert queued == []
    assert queued == [("runs.worker.execute_rejudge", rejudge.pk)]


def test_offline_it_replays_the_scripts_judge_and_says_so(tmp_path, settings, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    run = judged_run(tmp_path / "a", [("NO", "R1"), ("NO", "R2")])
    script = tmp_path / "report.script.yaml"
    script.write_text('passes:\n  - judge: "NO\\nstill a draft"\n  - judge: "YES\\nall there"\n')
    run.script_path = str(script)
    run.save()
    rejudge = start(n=2)
    assert (rejudge.provider, rejudge.judge_model) == ("scripted", "scripted-demo")
    done = rj.rejudge_execute(rejudge.pk)
    assert done.cause == "done" and done.cost in (None, Decimal(0))
    assert [(i.run_pass.number, i.new_verdict) for i in done.items.all()] == [(2, "YES"), (1, "NO")]
    assert rj.provider_label(done.provider) == "offline scripted judge"


def test_the_sweeper_finishes_a_rejudge_whose_worker_died(fake_anthropic, history):
    from datetime import timedelta

    from django.utils import timezone

    rejudge = start(n=2)
    started = timezone.now() - timedelta(minutes=10)
    Rejudge.objects.filter(pk=rejudge.pk).update(state=RejudgeState.RUNNING, started_at=started)
    assert rj.rejudges_sweep_lost(now=started + timedelta(minutes=14)) == []  # 2 calls + 1 could still be going
    assert rj.rejudges_sweep_lost(now=started + timedelta(minutes=16)) == [f"re-judge #{rejudge.pk}: worker lost"]
    rejudge.refresh_from_db()
    assert (rejudge.state, rejudge.cause) == (RejudgeState.FINISHED, "error: worker lost")
    assert rj.rejudge_execute(rejudge.pk) is None


OFFLINE_SCRIPT = """passes:
  - task:
      - text: Saving.
        tool_calls: [{name: save_result, input: {filename: list.md, content: "PARTIAL: two books"}}]
      - text: Done.
    judge: "NO\\nonly two books"
  - task:
      - text: Saving.
        tool_calls: [{name: save_result, input: {filename: list.md, content: "five books"}}]
      - text: Done.
    judge: "YES\\nfive books"
"""


def test_offline_a_real_scripted_runs_snapshots_are_rejudged(recipe_file, monkeypatch):
    from runs import services, worker
    from runs.wiring import arm_run

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    path = recipe_file(
        "---\nloop:\n  while:\n    max_iterations: 2\n    prompts:\n      until: list.md has 5 books\n---\nList books.\n"
    )
    path.with_name("job.script.yaml").write_text(OFFLINE_SCRIPT)
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert run.cause == "fulfilled" and run.passes.filter(snapshot_at__isnull=False).count() == 2
    rejudge = rj.rejudge_start(
        kind="task", name="job", until="list.md has 3 books", judge_model="x", n=10, enqueue=False
    )
    assert (rejudge.provider, rejudge.judge_model, rejudge.script_path) == (
        "scripted",
        "scripted-demo",
        str(path.with_name("job.script.yaml")),
    )
    done = rj.rejudge_execute(rejudge.pk)
    items = list(done.items.all())
    assert [(i.run_pass.number, i.result_name, i.old_verdict, i.new_verdict) for i in items] == [
        (2, "list.md", "YES", "YES"),
        (1, "list.md", "NO", "NO"),
    ]
    assert done.cause == "done" and done.cost in (None, Decimal(0)) and done.tokens_counted > 0


def test_the_new_goal_is_filled_with_each_runs_own_arguments(fake_anthropic, tmp_path):
    """As the run's judge read its goal (docs/recipes.md): placeholders filled per run, never sent raw."""
    run = judged_run(tmp_path / "c", [("YES", "R9 cats")])
    run.recipe_text, run.args = "---\nargs: [topic]\n---\nx\n", ["cats"]
    run.save()
    scripted_verdicts(fake_anthropic, {"R9": "NO\nonly one"})
    rejudge = rj.rejudge_start(
        kind="task",
        name="report",
        until="Three sources on {{topic}}.",
        judge_model="claude-haiku-4-5",
        n=1,
        enqueue=False,
    )
    rj.rejudge_execute(rejudge.pk)
    sent = str([r.json["messages"] for r in fake_anthropic.requests if r.path == "/v1/messages"])
    assert "Three sources on cats." in sent and "{{topic}}" not in sent
