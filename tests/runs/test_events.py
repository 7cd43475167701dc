"""A push announces a row that is already committed: inside a transaction it waits for the
commit (and a rollback sends nothing); a worker's in-memory layer with no live hub is skipped."""

import pytest
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer
from django.db import transaction

from runs import events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pushed(monkeypatch):
    sent = []
    monkeypatch.setattr(events, "push", lambda run_id, event_id, kind: sent.append((run_id, event_id, kind)))
    return sent


@pytest.fixture
def run(start):
    return start("---\n---\nGo.\n")


def test_it_pushes_at_once_outside_a_transaction(run, pushed):
    event = events.record(run, "note", "hello")
    assert pushed == [(run.pk, event.pk, "note")]


def test_it_pushes_only_once_the_transaction_commits(run, pushed):
    with transaction.atomic():
        event = events.record(run, "step", "step 1")
        assert pushed == []  # the event's row is not visible to anyone yet
    assert pushed == [(run.pk, event.pk, "step")]


def test_it_pushes_nothing_for_an_event_rolled_back(run, pushed):
    with pytest.raises(RuntimeError), transaction.atomic():
        events.record(run, "step", "step 1")
        raise RuntimeError("the settle failed")
    assert pushed == []


def test_an_in_memory_layer_is_pushed_to_only_when_a_live_hub_of_this_process_listens(monkeypatch):
    layer = InMemoryChannelLayer()
    sent = []

    async def group_send(group, message):
        sent.append(group)

    monkeypatch.setattr(events, "get_channel_layer", lambda: layer)
    monkeypatch.setattr(layer, "group_send", group_send)
    events.push(7, 1, "step")
    assert sent == []  # a worker: the sockets live in the web server, whose hub tails the event log
    async_to_sync(layer.group_add)(events.RUNS_GROUP, "the-hub-of-this-process")
    events.push(7, 2, "step")
    assert sent == [events.RUNS_GROUP]  # one message per process: the hub fans it out
