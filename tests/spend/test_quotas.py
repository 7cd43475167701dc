"""Quotas enforced by the reservation (docs/spend.md): every call's reservation is taken from each
quota that applies before the call; a call that does not fit waits (`paused(quota: …)`) and
the run goes on by itself when the quota has room again. Never a token past a quota."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from budgets.guard import MIN_USEFUL_OUTPUT, input_bound
from runs.ledger import settle_pending_steps
from runs.models import LedgerEntry, Pass, Run, RunEvent, RunState, Step, StepStatus
from runs.quota_waits import quota_wake
from spend import quotas
from spend.models import Quota, QuotaHold
from spend.services import QuotaError, price_set, quota_remove, quota_set
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

TASK = """
    ---
    loop:
      do:
        max_iterations: 12
        budget:
          size: 40p
    ---
    Write a list, one entry a step.
"""
SAVE = tool("save_result", filename="list.md", content="entry " * 40)


def greedy(steps: int = 8) -> FakeModel:
    """Spends the most every call can: its whole input bound and all of max_tokens."""
    return FakeModel(task=[{"text": "working", "tools": [SAVE]}] * steps + [{"text": "Done."}], adversarial=True)


def counted(run: Run) -> int:
    return sum(LedgerEntry.objects.filter(run=run).values_list("counted_tokens", flat=True))


def test_a_run_pauses_on_a_daily_quota_and_never_passes_it(start):
    quota = quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    run = drive(start(TASK), greedy())
    assert run.state == RunState.PAUSED and run.state_label == "paused(quota: installation)"
    quota.refresh_from_db()
    assert counted(run) == quota.used_tokens <= 30_000 and quota.reserved_tokens == 0
    assert not QuotaHold.objects.exists() and not Step.objects.filter(status=StepStatus.PENDING).exists()
    paused = RunEvent.objects.filter(run=run, kind="paused").last()
    assert paused.message.startswith("paused(quota: installation): today's installation quota has ")
    assert (
        "this call needs at least" in paused.message and paused.data["need_tokens"] > quota.tokens - quota.used_tokens
    )


def test_raising_the_quota_continues_the_run_from_where_it_waited(start, django_capture_on_commit_callbacks):
    quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    run = drive(start(TASK), greedy())
    steps_before = Step.objects.filter(run_pass__run=run).count()
    assert run.state == RunState.PAUSED
    with django_capture_on_commit_callbacks(execute=True):
        quota_set(scope="installation", window="day", tokens=5_000_000, dollars=None)
    run.refresh_from_db()
    assert run.state == RunState.QUEUED  # woken by the raise, not by a person
    assert RunEvent.objects.filter(run=run, kind="continued").last().message == (
        "continue from paused(quota: installation)"
    )
    run = drive(run, greedy())
    assert run.cause == "done" and Pass.objects.filter(run=run).count() == 1  # the same pass went on
    assert Step.objects.filter(run_pass__run=run).count() > steps_before


def test_a_quota_set_in_the_afternoon_counts_the_morning_s_spend(start):
    first = drive(start(TASK, name="morning"), greedy(2))
    assert first.cause == "done"
    quota = quota_set(scope="installation", window="day", tokens=first.tokens_counted + 100, dollars=None)
    quota = quotas.current(quota)
    assert quota.used_tokens == first.tokens_counted
    second = drive(start(TASK, name="afternoon"), greedy(2))
    assert second.state_label == "paused(quota: installation)" and second.tokens_counted == 0


def test_a_new_window_counts_afresh_and_wakes_the_runs_that_waited(start, settings):
    settings.TIME_ZONE = "UTC"
    quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    run = drive(start(TASK), greedy())
    assert run.state == RunState.PAUSED
    assert quota_wake() == []  # the same day: still no room
    tomorrow = timezone.now() + timedelta(days=1)
    said = quota_wake(now=tomorrow)
    assert said == [f"run #{run.pk} continues from its checkpoint (was paused(quota: installation))"]
    quota = quotas.current(Quota.objects.get(), now=tomorrow)
    assert quota.used_tokens == 0  # yesterday's spend is yesterday's


def test_recipe_and_user_quotas_apply_only_to_their_own_runs(start):
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    quota_set(scope="recipe", target="task/capped", window="day", tokens=20_000, dollars=None)
    quota_set(scope="user", user=alice, window="month", tokens=25_000, dollars=None)
    capped = drive(start(TASK, name="capped", user=bob), greedy())
    assert capped.state_label == "paused(quota: recipe)" and capped.tokens_counted <= 20_000
    free = drive(start(TASK, name="free", user=bob), greedy())
    assert free.cause == "done"  # bob has no quota, and this recipe none either
    alices = drive(start(TASK, name="alices", user=alice), greedy())
    assert alices.state_label == "paused(quota: user)" and alices.tokens_counted <= 25_000


def test_a_dollar_quota_counts_money_and_pauses_a_model_with_no_price(start, django_capture_on_commit_callbacks):
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("0.20"))
    run = start(TASK, name="priced")
    Run.objects.filter(pk=run.pk).update(executor_model="claude-sonnet-4-5", judge_model="claude-sonnet-4-5")
    run = drive(run, greedy())
    quota = Quota.objects.get()
    assert run.state_label == "paused(quota: installation)"
    assert quota.used_micros <= 200_000 and quota.used_micros == pytest.approx(float(run.cost) * 1_000_000, abs=2)
    unpriced = start(TASK, name="unpriced")
    Run.objects.filter(pk=unpriced.pk).update(executor_model="claude-fable-5-2", judge_model="claude-fable-5-2")
    unpriced = drive(unpriced, greedy())
    assert unpriced.state_label == "paused(quota: installation)" and unpriced.tokens_counted == 0
    message = RunEvent.objects.filter(run=unpriced, kind="paused").last().message
    assert "today's installation quota is in dollars and this call's model has no price" in message
    with django_capture_on_commit_callbacks(execute=True):
        price_set(
            model="claude-fable-5-2",
            input=Decimal("5"),
            output=Decimal("25"),
            cache_read=Decimal("0.5"),
            cache_write=Decimal("6.25"),
        )
        quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("50"))
    unpriced.refresh_from_db()
    assert unpriced.state == RunState.QUEUED  # a price and room: it goes on
    unpriced = drive(unpriced, greedy(2))
    assert unpriced.cause == "done" and unpriced.cost > 0


def test_the_offline_scripted_model_costs_nothing_under_a_dollar_quota(start):
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("0.01"))
    run = drive(start(TASK), greedy(3))
    assert run.executor_model == "scripted-demo" and run.cause == "done"


def test_a_call_whose_worker_died_stays_counted_at_its_reservation(start):
    quota_set(scope="installation", window="day", tokens=1_000_000, dollars=None)

    def die(request):
        if len(model.requests) == 3:
            raise SystemExit("the worker died mid-call")

    model = greedy()
    model.on_call = die
    run = start(TASK)
    with pytest.raises(SystemExit):
        drive(run, model)
    pending = Step.objects.get(run_pass__run=run, status=StepStatus.PENDING)
    quota = Quota.objects.get()
    assert quota.reserved_tokens == pending.reserved_tokens  # still held: never under
    settle_pending_steps(run)
    settle_pending_steps(run)  # the sweeper twice: never twice
    quota.refresh_from_db()
    run.refresh_from_db()
    assert quota.reserved_tokens == 0 and quota.used_tokens == run.tokens_counted == counted(run)


def test_a_failed_call_gives_its_reservation_back(start):
    quota_set(scope="installation", window="day", tokens=1_000_000, dollars=None)
    run = drive(start(TASK), FakeModel(task=[RuntimeError("boom")]))
    quota = Quota.objects.get()
    assert quota.reserved_tokens == 0 and quota.used_tokens == counted(run)


def test_a_removed_quota_lets_its_waiting_runs_go_on(start, django_capture_on_commit_callbacks):
    quota = quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    run = drive(start(TASK), greedy())
    with django_capture_on_commit_callbacks(execute=True):
        quota_remove(quota=quota)
    run.refresh_from_db()
    assert run.state == RunState.QUEUED


def test_a_quota_that_limits_nothing_or_names_no_one_is_refused():
    with pytest.raises(QuotaError, match="a quota needs tokens, dollars or both"):
        quota_set(scope="installation", window="day", tokens=None, dollars=None)
    with pytest.raises(QuotaError, match="a recipe quota names its recipe as kind/name"):
        quota_set(scope="recipe", window="day", tokens=5, dollars=None)
    with pytest.raises(QuotaError, match="window 'week': expected one of day, month, rolling 24h"):
        quota_set(scope="installation", window="week", tokens=5, dollars=None)


@pytest.mark.django_db(transaction=True)
def test_concurrent_reservations_never_pass_the_limit_together(start):
    """Eight threads, each its own database connection, take 3,000 tokens at a time from a
    quota of 50,000 until it refuses: exactly 16 fit, whoever wins each race."""
    quota_set(scope="installation", window="day", tokens=50_000, dollars=None)
    run = start(TASK)
    run_pass = Pass.objects.create(run=run, number=1)
    taken, refused, errors = [], [], []
    number = iter(range(1, 10_000))
    lock = threading.Lock()

    def worker():
        try:
            while True:
                with lock:
                    n = next(number)
                step = Step.objects.create(
                    run_pass=run_pass, number=n, leg="task", model="m", max_tokens=1, reserved_tokens=3_000
                )
                try:
                    with transaction.atomic():
                        quotas.take(step, quotas.quotas_for(target=run.target, user_id=None), model="m", tokens=3_000)
                    taken.append(n)
                except quotas.QuotaRefused:
                    refused.append(n)
                    return
        except Exception as exc:  # pragma: no cover - shown by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    quota = Quota.objects.get()
    assert len(taken) == 16 and quota.reserved_tokens == 48_000 == sum(
        QuotaHold.objects.values_list("tokens", flat=True)
    )


def test_a_little_room_wakes_as_many_waiting_runs_as_fit_not_all_of_them(start, django_capture_on_commit_callbacks):
    quota_set(scope="installation", window="day", tokens=30_000, dollars=None)
    first = drive(start(TASK, name="first"), greedy())
    second = drive(start(TASK, name="second"), greedy())
    assert first.state == second.state == RunState.PAUSED
    quota = quotas.current(Quota.objects.get())
    need = max(e.data["need_tokens"] for e in RunEvent.objects.filter(kind="paused"))
    with django_capture_on_commit_callbacks(execute=True):
        quota_set(scope="installation", window="day", tokens=quota.used_tokens + need + 10, dollars=None)
    states = sorted(Run.objects.values_list("state", flat=True))
    assert states == [RunState.PAUSED, RunState.QUEUED]  # room for one call: one run goes on


def test_a_reply_a_quota_cut_short_is_neither_done_nor_a_budget_stop(start, django_capture_on_commit_callbacks):
    """max_tokens is clamped to what the quota leaves (so a quota is used to its end); a reply
    cut there is told so and goes on once the quota has room again."""
    quota_set(scope="installation", window="day", tokens=6_000, dollars=None)
    model = FakeModel(task=[{"text": "a long essay " * 4000}, {"text": "Done."}])
    run = drive(start(TASK), model)
    first = model.requests[0]
    assert first.max_tokens < 8192  # the quota's room, not the default
    assert run.state_label == "paused(quota: installation)"
    run_pass = Pass.objects.get(run=run)
    assert run_pass.task_stop == "" and run_pass.ended_at is None  # the leg did not end
    last = run_pass.messages[-1]
    assert last["role"] == "user" and "cut off here: the team's spend quota" in last["content"][0]["text"]
    with django_capture_on_commit_callbacks(execute=True):
        quota_set(scope="installation", window="day", tokens=1_000_000, dollars=None)
    run = drive(run, model)
    assert run.cause == "done" and Pass.objects.get(run=run).task_stop == "done"
    assert Quota.objects.get().used_tokens == run.tokens_counted


def test_near_a_quota_the_input_is_counted_exactly_so_the_quota_is_used_to_its_end(start):
    """The byte bound of the first call does not fit the quota; its exact count does: the call
    is made (with the room that is left for its reply), not paused."""
    quota_set(scope="installation", window="day", tokens=3_000, dollars=None)
    model = FakeModel(task=[{"text": "Done."}])
    run = drive(start(TASK), model)
    first = model.requests[0]  # its messages list is the conversation's: the first turn is what it sent
    byte_bound = input_bound(system=first.system, tools=first.tools, messages=first.messages[:1], last=None)
    assert byte_bound + MIN_USEFUL_OUTPUT > 3_000  # the byte bound alone would have paused it
    step = Step.objects.get(run_pass__run=run, number=1)
    assert run.cause == "done" and step.reserved_tokens <= 3_000 and step.max_tokens == first.max_tokens >= 256


def test_a_run_reads_the_quotas_once_while_none_exists_and_sees_one_made_mid_run(start):
    """The settle's UPDATE says whether any quota exists (RETURNING, no statement of its own), so
    a step where none does reads no quota; one made during a call counts from the next call on."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as spent:
        run = drive(start(TASK, name="free"), greedy(4))
    assert run.cause == "done"
    quota_reads = [q for q in spent.captured_queries if q["sql"].startswith("SELECT") and '"spend_quota"' in q["sql"]]
    assert len(quota_reads) == 1  # the first call's; every later one was told by the settle before it

    def make_a_quota(request):
        if model.calls == 2:  # during the second call: its settle sees the quota, the third call fits it
            quota_set(scope="installation", window="day", tokens=1_000, dollars=None)

    model = FakeModel(task=[{"text": "working", "tools": [SAVE]}] * 8 + [{"text": "Done."}], on_call=make_a_quota)
    run = drive(start(TASK, name="later"), model)
    assert run.state_label == "paused(quota: installation)" and model.calls == 2
