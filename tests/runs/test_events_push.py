"""Pushes over Redis (runs/events.py) leave from one loop per process that keeps its connection:
a worker pushes once a step, and a new connection per push cost ~6 ms. A forked child (django-q2's
workers are forks of the cluster) starts a loop of its own; a push that cannot reach Redis is
logged and dropped, never raised into the engine."""

import functools
import multiprocessing
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from runs import events


@pytest.fixture
def redis_layer(settings, redis_url):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}}
    }
    return get_channel_layer()


def in_own_thread(test):
    """The test's body in a thread of its own: in the whole suite Playwright's sync API (the e2e
    tests' browser, session-wide) keeps an event loop running in the main thread, where
    async_to_sync is refused."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(test, *args, **kwargs).result()

    return wrapper


def received_since(url: str) -> int:
    return redis.Redis.from_url(url).info("stats")["total_connections_received"]


def listen(layer) -> str:
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(events.RUNS_GROUP, channel)
    return channel


@in_own_thread
def test_it_reuses_one_connection_for_every_push(redis_layer, redis_url):
    events.push(1, None, "warm")  # the loop and its connection, once
    before = received_since(redis_url)
    for n in range(20):
        events.push(n, None, "step")
    assert received_since(redis_url) - before <= 1  # the probe's own connection


@in_own_thread
def test_each_push_arrives_in_order(redis_layer):
    channel = listen(redis_layer)
    for n in range(5):
        events.push(n, None, "step")

    async def five():
        return [(await redis_layer.receive(channel))["run_id"] for _ in range(5)]

    assert async_to_sync(five)() == [0, 1, 2, 3, 4]


def _child_push(run_id: int) -> None:
    events.push(run_id, None, "from a fork")
    os._exit(0)


@in_own_thread
def test_a_forked_child_pushes_through_a_loop_of_its_own(redis_layer):
    events.push(1, None, "the parent's loop exists before the fork")
    parent_loop = events._loop
    channel = listen(redis_layer)
    child = multiprocessing.get_context("fork").Process(target=_child_push, args=(42,))
    child.start()
    child.join(10)
    assert child.exitcode == 0
    assert async_to_sync(redis_layer.receive)(channel)["run_id"] == 42
    assert events._loop is parent_loop  # the parent's is untouched


@in_own_thread
def test_a_push_that_cannot_reach_redis_is_logged_not_raised(settings, caplog, monkeypatch):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]}}
    }
    monkeypatch.setattr(events, "PUSH_SECONDS", 2.0)
    events.push(7, None, "step")  # no exception
    assert "live push failed" in caplog.text
