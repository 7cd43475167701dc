"""The models of today in the ledger and the quotas: a one-hour cache write is priced at its own
rate, and a tiered model's reservation at the tier its bound can reach."""

from decimal import Decimal
from types import SimpleNamespace

import pytest

from agents.anthropic_model import _to_reply
from agents.ports import Usage
from budgets.prices import cost
from budgets.quota import reservation_micros
from runs.ledger import Ledger, usage_cost
from runs.models import LedgerEntry, Pass
from spend.models import Quota, QuotaHold
from spend.prices import micros_per_token
from spend.quotas import room_for
from spend.services import quota_set

pytestmark = pytest.mark.django_db

ONE_PASS = "---\nloop:\n  do:\n    budget:\n      size: 1b\n---\nWork.\n"


def test_a_bound_within_the_first_tier_reserves_at_it_and_one_beyond_at_the_higher():
    assert micros_per_token("claude-haiku-5-5", 100_000) == Decimal("0.50")  # its dearest rate: output
    assert micros_per_token("claude-haiku-5-5", 100_001) == Decimal("2.50")
    assert micros_per_token("claude-haiku-5-5") == Decimal("2.50")  # no bound given: the dearest tier
    assert micros_per_token("claude-sonnet-5-5", 10) == micros_per_token("claude-sonnet-5-5") == Decimal(10)
    assert micros_per_token("claude-fable-5-2") is None  # no verified price yet


def test_the_provider_reports_one_hour_cache_writes_apart_and_the_ledger_prices_them(start):
    message = SimpleNamespace(
        content=[],
        stop_reason="end_turn",
        usage=SimpleNamespace(
            input_tokens=1000,
            output_tokens=200,
            cache_read_input_tokens=5000,
            cache_creation_input_tokens=3000,
            cache_creation=SimpleNamespace(ephemeral_5m_input_tokens=1000, ephemeral_1h_input_tokens=2000),
        ),
    )
    usage = _to_reply(message).usage
    assert usage == Usage(1000, 3000, 5000, 200, cache_write_1h_tokens=2000)
    assert usage.counted == 4200  # the one-hour part is a part of the writes, counted once
    no_detail = SimpleNamespace(**{**vars(message.usage), "cache_creation": None})
    assert _to_reply(SimpleNamespace(content=[], stop_reason=None, usage=no_detail)).usage.cache_write_1h_tokens == 0

    expected = (1000 * 2 + 200 * 10 + 5000 * Decimal("0.20") + 1000 * Decimal("2.50") + 2000 * 4) / Decimal(10**6)
    assert usage_cost("claude-sonnet-5-5", usage) == expected
    assert expected > cost("claude-sonnet-5-5", input=1000, output=200, cache_read=5000, cache_write=3000)

    run = start(ONE_PASS)
    the_pass = Pass.objects.create(run=run, number=1)
    books = Ledger(run)
    step = books.reserve(the_pass, leg="task", model="claude-sonnet-5-5", max_tokens=4000, bound=9000, message_count=1)
    books.settle(step, usage, clock_seconds=1.0)
    assert LedgerEntry.objects.get(step=step).cost == expected


def test_a_quota_holds_a_haiku_5_5_call_at_the_tier_of_its_bound(start):
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal(100))
    run = start(ONE_PASS)
    the_pass = Pass.objects.create(run=run, number=1)
    books = Ledger(run)
    small = books.reserve(
        the_pass, leg="task", model="claude-haiku-5-5", max_tokens=4000, bound=50_000, message_count=1
    )
    big = books.reserve(the_pass, leg="task", model="claude-haiku-5-5", max_tokens=4000, bound=150_000, message_count=1)
    assert QuotaHold.objects.get(step=small).micros == reservation_micros(54_000, Decimal("0.50")) == 27_000
    assert QuotaHold.objects.get(step=big).micros == reservation_micros(154_000, Decimal("2.50")) == 385_000
    assert Quota.objects.get().reserved_micros == 412_000


def test_a_dollar_quota_leaves_a_tiered_model_room_at_its_cheaper_tier_up_to_the_tier(start):
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("0.10"))
    run = start(ONE_PASS)
    # $0.10 is 40,000 tokens at the higher tier's $2.50/M, 200,000 at the lower's $0.50/M: the
    # lower tier holds only up to 100K tokens of prompt, so 100,000
    assert room_for(target=run.target, user_id=None, model="claude-haiku-5-5").tokens == 100_000
    assert room_for(target=run.target, user_id=None, model="claude-sonnet-5-5").tokens == 10_000
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal("0.01"))
    assert room_for(target=run.target, user_id=None, model="claude-haiku-5-5").tokens == 20_000
    quota_set(scope="installation", window="day", tokens=None, dollars=Decimal(1))
    assert room_for(target=run.target, user_id=None, model="claude-haiku-5-5").tokens == 400_000
