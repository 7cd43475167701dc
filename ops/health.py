"""Liveness and readiness (docs: Operating it): the checks behind /readyz, and the worker
clusters' heartbeat they read.

Worker liveness: django-q2 keeps its cluster stats in the cache, which on the embedded default is
each process's own memory, invisible to the web process. So the brokers below (django-q2's own,
named in Q_CLUSTER["broker_class"]) also write a WorkerBeat row when the cluster's leader saves
its stats from its guard loop (every half second): at most once a quarter of
RYSH_READY_WORKER_SECONDS, only while the cluster is idle or working, and the row is deleted when
the cluster stops cleanly. A cluster killed outright is noticed when its row is older than
RYSH_READY_WORKER_SECONDS. The row also says whether the cluster's commands can run sandboxed
(runs.wiring.sandbox_state, a fixed word; bubblewrap is probed once per process): a worker that
cannot leaves coding runs queued, and /readyz says so.

Every answer is a short fixed word ("ok", "unreachable", …): never an exception's text, which
could carry a path, a host or a URL with a password, and never a count.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from catalogue.repo import open_repo
from runs.models import WorkerBeat
from runs.wiring import sandbox_state

log = logging.getLogger(__name__)

# a check that takes longer than this answers "timeout" (its thread is left to finish alone)
CHECK_SECONDS = 2.0
# rows of clusters gone for longer than this are deleted by the next beat of any cluster
FORGET_AFTER = timedelta(days=1)

_last_beat: dict[str, float] = {}


def beat_interval() -> float:
    return min(15.0, max(0.5, settings.RYSH_READY_WORKER_SECONDS / 4))


def beat(key: str, value: str) -> None:
    """Record a cluster's stats save as a heartbeat (throttled); never raises into django-q2."""
    try:
        stat = SignedPackage.loads(value)
        cluster = str(stat.cluster_id)
        if stat.status in (Conf.STOPPING, Conf.STOPPED):
            if _last_beat.pop(key, None) is not None:
                WorkerBeat.objects.filter(cluster=cluster).delete()
            return
        if stat.status not in (Conf.IDLE, Conf.WORKING):
            return
        now = time.monotonic()
        if now - _last_beat.get(key, -1e9) < beat_interval():
            return
        seen = timezone.now()
        WorkerBeat.objects.update_or_create(cluster=cluster, defaults={"seen": seen, "sandbox": sandbox_state()})
        WorkerBeat.objects.filter(seen__lt=seen - FORGET_AFTER).delete()
        _last_beat[key] = now
    except Exception:  # a heartbeat must never stop the cluster's guard loop
        log.warning("worker heartbeat not written", exc_info=True)


class _Beating:
    """A django-q2 broker whose cluster stats also leave a WorkerBeat row."""

    def set_stat(self, key: str, value: str, timeout: int):
        super().set_stat(key, value, timeout)
        beat(key, value)


class OrmBroker(_Beating, ORM):
    """django-q2's ORM broker, whose cluster stats also leave a WorkerBeat row."""


class RedisBroker(_Beating, Redis):
    """django-q2's Redis broker, whose cluster stats also leave a WorkerBeat row."""


# --- the checks: each returns "ok" or a short fixed reason ------------------------------------


def check_database() -> str:
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        return "unreachable"
    return "ok"


_migrated_at = 0.0


def check_migrations() -> str:
    """Every migration this code knows of is applied (an ok is remembered for a minute: loading
    the migration graph is the dearest part of the probe, and migrations only move forward)."""
    global _migrated_at
    if time.monotonic() - _migrated_at < 60:
        return "ok"
    try:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception:
        return "unreachable"
    if plan:
        return "unapplied"
    _migrated_at = time.monotonic()
    return "ok"


def forget_migrations() -> None:
    """For tests: check the migrations again on the next probe."""
    global _migrated_at
    _migrated_at = 0.0


def check_broker() -> str:
    """The task queue answers: Redis's PING, or the ORM broker's table."""
    if settings.REDIS_URL:
        return _bounded(_redis_ping, failed="unreachable")
    try:
        OrmQ.objects.using(Conf.ORM).filter(pk=0).exists()
    except Exception:
        return "unreachable"
    return "ok"


def _redis_ping() -> str:
    return "ok" if Redis.get_connection().ping() else "unreachable"


def workers_seen():
    """The worker clusters with a heartbeat within RYSH_READY_WORKER_SECONDS (also /metrics')."""
    since = timezone.now() - timedelta(seconds=settings.RYSH_READY_WORKER_SECONDS)
    return WorkerBeat.objects.filter(seen__gte=since)


def check_workers() -> str:
    """At least one cluster's heartbeat within RYSH_READY_WORKER_SECONDS."""
    try:
        alive = workers_seen().exists()
    except Exception:
        return "unreachable"
    return "ok" if alive else "none"


def check_sandbox() -> str:
    """No worker cluster seen within RYSH_READY_WORKER_SECONDS says it cannot sandbox (RYSH_SANDBOX
    on there, and no working bubblewrap): such a worker leaves every coding run queued."""
    try:
        unable = workers_seen().filter(sandbox="unavailable").exists()
    except Exception:
        return "unreachable"
    return "unavailable" if unable else "ok"


def check_recipes() -> str:
    """The recipes repository opens and its branch resolves (a clone URL: its local mirror)."""
    return _bounded(_read_recipes, failed="unreadable")


def _read_recipes() -> str:
    repo = open_repo(settings.RYSH_RECIPES_REPO)
    return "ok" if repo.resolve(settings.RYSH_RECIPES_BRANCH) else "unreadable"


def _bounded(check, *, failed: str) -> str:
    """Run `check` in a thread of its own for at most CHECK_SECONDS: a hung broker or git must
    not hang the probe. Any exception is the fixed word `failed`."""
    answer = ["timeout"]

    def run() -> None:
        try:
            answer[0] = check()
        except Exception:
            answer[0] = failed

    thread = threading.Thread(target=run, name="readyz", daemon=True)
    thread.start()
    thread.join(CHECK_SECONDS)
    return answer[0]


def readiness() -> dict[str, str]:
    """Every check by name; the database's failure skips the checks that need it."""
    checks = {"database": check_database()}
    if checks["database"] == "ok":
        checks["migrations"] = check_migrations()
        checks["workers"] = check_workers()
        checks["sandbox"] = check_sandbox()
    else:
        checks["migrations"] = checks["workers"] = checks["sandbox"] = "skipped"
    if settings.REDIS_URL or checks["database"] == "ok":
        checks["broker"] = check_broker()
    else:
        checks["broker"] = "skipped"
    checks["recipes"] = check_recipes()
    return checks
