"""The ledger: a call's reservation is its pending step, committed before the call; settling
writes the real usage, one ledger entry and the run's totals, read back exact; a dead
worker's pending step is counted at its reservation, once."""

from decimal import Decimal

import pytest

from agents.ports import Usage
from budgets.prices import cost
from runs import ledger
from runs.ledger import Ledger
from runs.models import Control, LedgerEntry, Pass, Run, Step, StepStatus
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

ONE_PASS = "---\nloop:\n  do:\n    budget:\n      size: 1b\n---\nWork.\n"


def ledger_total(run) -> int:
    return sum(LedgerEntry.objects.filter(run=run).values_list("counted_tokens", flat=True))


def test_a_call_in_flight_is_counted_on_its_pending_step_before_it_is_made(start):
    run = start(ONE_PASS)
    seen = []

    def look(request):
        step = Step.objects.get(run_pass__run=run, status=StepStatus.PENDING)
        total = Run.objects.get(pk=run.pk).tokens_counted
        seen.append((step.number, step.reserved_tokens, step.max_tokens, total, ledger_total(run)))

    model = FakeModel(task=[{"text": "a", "tools": [tool("list_results")]}, {"text": "Done."}], on_call=look)
    run = drive(run, model)
    assert [s[0] for s in seen] == [1, 2]
    for number, reserved, max_tokens, total, entries in seen:
        assert reserved > max_tokens == model.requests[number - 1].max_tokens
        assert total == entries  # settled calls only; the one in flight is on its step
    steps = Step.objects.filter(run_pass__run=run)
    assert run.tokens_counted == ledger_total(run) == sum(s.counted_tokens for s in steps)


def test_a_dead_workers_pending_step_is_counted_at_its_reservation_once(start):
    run = start(ONE_PASS)
    the_pass = Pass.objects.create(run=run, number=1)
    step = Ledger(run).reserve(the_pass, leg="task", model="m", max_tokens=100, bound=1134, message_count=1)
    assert ledger.settle_pending_steps(run) == 1
    assert ledger.settle_pending_steps(run) == 0
    step.refresh_from_db()
    the_pass.refresh_from_db()
    assert (step.status, step.counted_tokens, the_pass.steps_total) == (StepStatus.LOST, 1234, 1)
    assert Run.objects.get(pk=run.pk).tokens_counted == run.tokens_counted == ledger_total(run) == 1234


def test_settling_reads_back_exact_totals_and_the_control_a_person_wrote_meanwhile(start):
    run = start(ONE_PASS)
    Run.objects.filter(pk=run.pk).update(tokens_counted=500, seconds_used=1.5)
    run.refresh_from_db()
    the_pass = Pass.objects.create(run=run, number=1)
    books = Ledger(run)
    step = books.reserve(the_pass, leg="task", model="claude-sonnet-4-6", max_tokens=4000, bound=3000, message_count=1)
    Run.objects.filter(pk=run.pk).update(control=Control.STOP, input_tokens=7)  # someone else wrote
    usage = Usage(input_tokens=1200, cache_write_tokens=300, cache_read_tokens=900, output_tokens=250)
    books.settle(step, usage, clock_seconds=2.25)
    stored = Run.objects.get(pk=run.pk)
    assert stored.control == run.control == Control.STOP  # read back, and not overwritten
    assert (run.tokens_counted, run.seconds_used, run.input_tokens) == (500 + 1750, 3.75, 1207)
    for name in (
        "tokens_counted",
        "seconds_used",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost",
    ):
        assert getattr(stored, name) == getattr(run, name), name
    money = cost("claude-sonnet-4-6", input=1200, output=250, cache_read=900, cache_write=300)
    assert stored.cost == money.quantize(Decimal("0.000001")) > 0
    assert LedgerEntry.objects.get(step=step).counted_tokens == 1750 == ledger_total(run)
    assert books.last_call(the_pass).context == 2400


def test_an_interrupted_call_counts_its_reservation_and_a_refused_one_nothing(start):
    run = start(ONE_PASS)
    the_pass = Pass.objects.create(run=run, number=1)
    books = Ledger(run)
    cancelled = books.reserve(the_pass, leg="task", model="m", max_tokens=300, bound=700, message_count=1)
    books.settle_reserved(cancelled, StepStatus.CANCELLED, 0.5)
    failed = books.reserve(the_pass, leg="task", model="m", max_tokens=300, bound=700, message_count=1)
    books.settle_failed(failed, "overloaded (529)", 0.25)
    stored = Run.objects.get(pk=run.pk)
    assert (stored.tokens_counted, stored.seconds_used) == (1000, 0.75) == (run.tokens_counted, run.seconds_used)
    assert ledger_total(run) == 1000 and not LedgerEntry.objects.filter(step=failed).exists()
    assert Pass.objects.get(pk=the_pass.pk).steps_total == 2
    assert books.last_call(the_pass) is None  # neither is a call the next bound can build on
