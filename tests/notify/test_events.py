"""Which events reach which channels, from the real causes: a run that ends, pauses, crosses
its budget marks, waits for approval; a schedule disabled; change requests. And a dead
receiver never slows a run: deliveries are queued, never sent from the run's thread."""

from __future__ import annotations

import threading
import time

import pytest
from django_q.models import OrmQ

from notify import senders, services
from notify.models import Delivery, Once
from runs import approvals, ledger
from runs import services as run_services
from runs.engine import pause_run
from runs.models import Run
from runs.signals import budget_crossed
from tests.conftest import ONE_PASS, drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

NOTIFYING = ONE_PASS.replace(  # the same recipe, naming a channel of its own
    "    loop:\n", "    notify:\n      - channel: recipe-hook\n        events: [run.ended, run.paused]\n    loop:\n", 1
)


def channel(name, events=(), url="http://127.0.0.1:9/x"):
    return services.channel_save(user=None, name=name, kind="webhook", url=url, events_wanted=list(events))[0]


def saving_model():
    return FakeModel(
        task=[
            {"text": "saving", "tools": [tool("save_result", filename="summary.md", content="the summary")]},
            {"text": "All saved."},
        ]
    )


def test_a_run_that_ends_notifies_subscribed_channels_and_those_its_recipe_names(start):
    subscribed = channel("ops", ["run.ended"])
    named = channel("recipe-hook")  # subscribed to nothing: only the recipe's notify: sends it
    channel("quiet", ["change.opened"])
    channel("off", ["run.ended"]).__class__.objects.filter(name="off").update(enabled=False)
    run = drive(start(NOTIFYING), saving_model())
    assert run.cause == "done"
    rows = Delivery.objects.filter(event="run.ended").order_by("channel__name")
    assert [d.channel for d in rows] == [subscribed, named]
    payload = rows[0].payload
    assert payload["data"]["cause"] == "done" and payload["data"]["result_file"] == "summary.md"
    assert payload["data"]["passes"] == 1 and payload["data"]["tokens"] == run.tokens_counted
    assert payload["link"].endswith(f"/runs/{run.pk}/")


def test_a_recipe_without_notify_reaches_only_subscribed_channels(start):
    channel("recipe-hook")
    drive(start(ONE_PASS), saving_model())
    assert not Delivery.objects.exists()


def test_a_paused_run_notifies_with_its_reason(start):
    channel("ops", ["run.paused"])
    run = start(ONE_PASS)
    pause_run(run, "step cap")
    [delivery] = Delivery.objects.all()
    assert delivery.event == "run.paused" and delivery.payload["data"]["reason"] == "step cap"
    assert "paused(step cap)" in delivery.payload["title"]


def test_a_cancel_before_start_notifies_run_paused(start):
    channel("ops", ["run.paused"])
    run_services.run_cancel(run=start(ONE_PASS))
    assert Delivery.objects.get().payload["data"]["reason"] == "cancelled"


def test_an_approval_waiting_links_straight_to_it(start):
    channel("ops", ["approval.waiting"])
    run = start(ONE_PASS)
    Run.objects.filter(pk=run.pk).update(state="running")
    approval = approvals.request(
        run,
        pass_number=1,
        step_number=1,
        call={"name": "click", "input": {"text": "Publish"}},
        pattern="click:Publish*",
        subject="Publish",
        timeout_seconds=60,
    )
    delivery = Delivery.objects.get()
    assert delivery.event == "approval.waiting"
    assert delivery.payload["link"].endswith(f"/runs/{run.pk}/#approval-{approval.pk}")


def test_an_approval_waiting_sends_the_tool_and_its_field_names_never_their_values(start, receiver):
    r = receiver(200)
    services.channel_save(user=None, name="ops", kind="slack", url=r.url, events_wanted=["approval.waiting"])
    run = start(ONE_PASS)
    Run.objects.filter(pk=run.pk).update(state="running")
    approvals.request(
        run,
        pass_number=1,
        step_number=1,
        call={"name": "fill", "input": {"label": "Card number", "value": "4111 1111 1111 1111", "pin 0000": 1}},
        pattern="fill:Card*",
        subject="Card number",
        timeout_seconds=60,
    )
    delivery = Delivery.objects.get()
    services.deliver(delivery.pk)
    sent = r.requests[0]["body"].decode()
    for value in ("4111", "Card", "0000"):  # the typed text, the label, a key that is a value
        assert value not in sent and value not in str(delivery.payload), value
    assert "fields: label, value, 1 other field" in sent and "waits for approval: fill" in sent
    assert delivery.payload["data"]["tool"] == "fill" and delivery.payload["data"]["fields"] == ["label", "value"]


def test_budget_marks_are_announced_once_each_per_run(start):
    channel("ops", ["budget.50", "budget.80", "budget.95"])
    run = start(ONE_PASS)
    total = run.plan["worst_tokens"]
    seen = []
    budget_crossed.connect(lambda sender, percent, **kw: seen.append(percent), weak=False, dispatch_uid="t-seen")
    try:
        run.tokens_counted = int(total * 0.6)
        ledger._announce_marks(run, before=0)  # 0 -> 60%: the 50% mark
        run.tokens_counted = int(total * 0.97)
        ledger._announce_marks(run, before=int(total * 0.6))  # 60 -> 97%: 80 and 95
        ledger._announce_marks(run, before=int(total * 0.6))  # the same settle again (a retry)
    finally:
        budget_crossed.disconnect(dispatch_uid="t-seen")
    assert seen == [50, 80, 95, 80, 95]  # the ledger says what it crossed...
    events = sorted(Delivery.objects.values_list("event", flat=True))
    assert events == ["budget.50", "budget.80", "budget.95"]  # ...notify sends each once
    assert Once.objects.filter(key__startswith=f"run:{run.pk}:").count() == 3


def test_a_real_run_crosses_its_marks_through_the_ledger(start):
    channel("ops", ["budget.50", "budget.80", "budget.95"])
    seen = []
    budget_crossed.connect(lambda sender, percent, **kw: seen.append(percent), weak=False, dispatch_uid="t-real")
    try:
        run = drive(
            start(ONE_PASS), FakeModel(task=[{"text": "again", "tools": [tool("list_results")]}], adversarial=True)
        )
    finally:
        budget_crossed.disconnect(dispatch_uid="t-real")
    share = run.tokens_counted / run.plan["worst_tokens"]
    expected = [p for p in (50, 80, 95) if share * 100 >= p]
    assert seen == expected
    assert sorted(Delivery.objects.values_list("event", flat=True)) == [f"budget.{p}" for p in expected]


def test_a_dead_receiver_never_slows_a_run(start, sleeping_receiver, monkeypatch, django_capture_on_commit_callbacks):
    """Deliveries are rows queued for the workers: the run's thread never POSTs. Any POST is
    recorded with its thread and made to hang, so a run that sent inline would show both."""
    posts = []
    real_post = senders.post_json

    def hanging_post(url, body, headers, timeout=None):
        posts.append(threading.get_ident())
        return real_post(url, body, headers, timeout=2)

    monkeypatch.setattr(senders, "post_json", hanging_post)

    def timed(text, name):
        run = start(text, name=name)
        started = time.monotonic()
        with django_capture_on_commit_callbacks(execute=True):
            run = drive(run, saving_model())
        return run, time.monotonic() - started

    plain, plain_seconds = timed(ONE_PASS, "plain")
    channel("dead", ["run.ended", "budget.50", "budget.80", "budget.95"], url=sleeping_receiver)
    watched, watched_seconds = timed(ONE_PASS, "watched")
    print(f"\nrun without a channel: {plain_seconds:.3f}s; with a dead receiver: {watched_seconds:.3f}s")
    assert plain.cause == watched.cause == "done"
    assert posts == []  # nothing was sent from the run's thread
    delivery = Delivery.objects.get(event="run.ended")
    queued = [q.task["args"] for q in OrmQ.objects.all() if q.func() == "notify.tasks.deliver"]
    assert (delivery.pk,) in queued  # queued for a worker once the run's transaction committed
    # the worker's attempt then costs the worker its timeout, and is logged as a failure
    started = time.monotonic()
    services.deliver(delivery.pk)
    assert time.monotonic() - started < 5
    delivery.refresh_from_db()
    assert delivery.last_error.startswith("timed out") and delivery.state == "pending"
