"""The person who continues or grants a run pays for what it spends from then on (docs/spend.md): their user quota takes its reservations, the ledger counts its calls as theirs (a
window's recount and Spend by person), and an automatic continue changes nobody's bill."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.models import AuditEntry
from budgets.plan import Grant as PlanGrant
from runs import services
from runs.models import LedgerEntry, Run, RunEvent, RunState
from runs.quota_waits import quota_wake
from runs.selectors import spend_rows
from spend import quotas
from spend.models import Quota
from spend.services import quota_set
from tests.conftest import drive
from tests.fake_model import FakeModel
from tests.runs.test_grant import SAVE as LIST_SAVE
from tests.runs.test_grant import ended_at_the_pass_cap
from tests.spend.test_quotas import TASK, greedy

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return User.objects.create_user("alice"), User.objects.create_user("bob")


def tokens_of(run: Run, user) -> int:
    return sum(LedgerEntry.objects.filter(run=run, charged_to=user).values_list("counted_tokens", flat=True))


def test_a_continue_charges_the_person_who_continues(start, people):
    alice, bob = people
    alices = quota_set(scope="user", user=alice, window="day", tokens=25_000, dollars=None)
    run = drive(start(TASK, user=alice), greedy())
    assert run.state_label == "paused(quota: user)" and run.charged_to == alice
    spent_by_alice = quotas.current(Quota.objects.get(pk=alices.pk)).used_tokens
    assert spent_by_alice == tokens_of(run, alice) > 0

    services.run_continue(run=run, user=bob)  # bob wants it to go on: on his quota
    run.refresh_from_db()
    assert (run.user, run.charged_to) == (alice, bob)
    run = drive(run, greedy())
    assert run.cause == "done"  # bob has no quota: alice's no longer holds it back
    assert quotas.current(Quota.objects.get(pk=alices.pk)).used_tokens == spent_by_alice
    assert tokens_of(run, alice) == spent_by_alice and tokens_of(run, bob) > 0
    said = RunEvent.objects.filter(run=run, kind="continued").last().message
    assert said == "continue from paused(quota: user); bob's quota counts its calls from now on"
    assert AuditEntry.objects.get(action="run.continue").detail == {"paused": "quota: user", "charged_to": "bob"}

    # a quota set now (or a window's recount) counts what each was charged
    bobs = quotas.current(quota_set(scope="user", user=bob, window="day", tokens=10**9, dollars=None))
    assert bobs.used_tokens == tokens_of(run, bob)
    today = timezone.localdate()
    by_person = {r["who"]: r["tokens"] for r in spend_rows(by="person", period="day", since=today, until=today)}
    assert by_person == {"alice": spent_by_alice, "bob": tokens_of(run, bob)}


def test_the_continuer_s_own_quota_holds_the_run_back(start, people):
    alice, bob = people
    quota_set(scope="user", user=alice, window="day", tokens=25_000, dollars=None)
    run = drive(start(TASK, user=alice), greedy())
    assert run.state_label == "paused(quota: user)"
    quota_set(scope="user", user=alice, window="day", tokens=10**9, dollars=None)  # alice has room again…
    Run.objects.filter(pk=run.pk).update(state=RunState.PAUSED, pause_reason="quota: user")  # …but waits for a person
    quota_set(scope="user", user=bob, window="day", tokens=1_000, dollars=None)
    services.run_continue(run=Run.objects.get(pk=run.pk), user=bob)
    run = drive(Run.objects.get(pk=run.pk), greedy())
    assert run.state_label == "paused(quota: user)"  # bob's 1,000 tokens, not alice's room
    assert "quota of user bob" in RunEvent.objects.filter(run=run, kind="paused").last().message


def test_a_grant_charges_the_person_who_grants(start, people):
    alice, bob = people
    run = ended_at_the_pass_cap(lambda text: start(text, user=alice))
    services.run_grant(run=run, extra=PlanGrant(passes=1), user=bob)
    run.refresh_from_db()
    assert (run.user, run.charged_to) == (alice, bob)
    assert "bob's quota counts its calls from now on" in RunEvent.objects.get(run=run, kind="granted").message
    before = set(LedgerEntry.objects.filter(run=run).values_list("pk", flat=True))
    run = drive(
        run,
        FakeModel(task=[{"text": "s", "tools": [LIST_SAVE]}, {"text": "Done."}], judge=["NO", "NO", "YES\nfive"]),
    )
    assert run.cause == "fulfilled"
    after = LedgerEntry.objects.filter(run=run).exclude(pk__in=before)
    assert after.exists() and set(after.values_list("charged_to__username", flat=True)) == {"bob"}
    assert set(LedgerEntry.objects.filter(pk__in=before).values_list("charged_to__username", flat=True)) == {"alice"}


def test_an_automatic_continue_and_the_cli_keep_who_is_charged(start, people, settings):
    settings.TIME_ZONE = "UTC"
    alice, _ = people
    quota_set(scope="user", user=alice, window="day", tokens=25_000, dollars=None)
    run = drive(start(TASK, user=alice), greedy())
    assert quota_wake(now=timezone.now() + timedelta(days=1))  # a new day: woken by itself
    run.refresh_from_db()
    assert run.state == RunState.QUEUED and run.charged_to == alice
    Run.objects.filter(pk=run.pk).update(state=RunState.PAUSED, pause_reason="cancelled")
    services.run_continue(run=Run.objects.get(pk=run.pk), user=None)  # the CLI: no person
    assert Run.objects.get(pk=run.pk).charged_to == alice
