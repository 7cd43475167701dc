"""What the benchmarks that run real clusters share (bench.chaos, bench.quota): PostgreSQL and
Redis found or not, a Redis database number of the bench's own, a throwaway installation on them
(or on SQLite), the fake Messages server and how their fake models read its requests,
`manage.py qcluster` processes, and their teardown.

Needs PostgreSQL at RYSH_TEST_POSTGRES_URL (else postgres://postgres@127.0.0.1:5432/test; a
throwaway database is created on it and dropped) and Redis at RYSH_TEST_REDIS_URL (else
redis://127.0.0.1:6379; a database number each bench names, flushed before and after).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from urllib.parse import urlparse

from bench.engine import FAKE_KEY, Environment, QCluster, set_up

REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


# ---------------------------------------------------------------- reading a request (pure)


def tagger(pattern: re.Pattern[str]) -> Callable[[dict], str | None]:
    """The fake server's tagger: which run a request belongs to, by the tag `pattern` finds in it
    (each run's recipe names its own tag, so its prompt, its until and its notes carry it)."""

    def tag_of(body: dict) -> str | None:
        match = pattern.search(json.dumps(body))
        return match.group(0) if match else None

    return tag_of


def texts(content) -> list[str]:
    """The texts of a message's content: its text blocks and what its tool results say."""
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            out += texts(inner) if isinstance(inner, list) else [str(inner or "")]
    return out


# ---------------------------------------------------------------- services


def service_urls() -> tuple[str, str]:
    """PostgreSQL's URL and Redis's without a database number."""
    pg = os.environ.get("RYSH_TEST_POSTGRES_URL") or "postgres://postgres@127.0.0.1:5432/test"
    redis = os.environ.get("RYSH_TEST_REDIS_URL") or "redis://127.0.0.1:6379"
    return pg, redis.rstrip("/").rsplit("/", 1)[0] if re.search(r"/\d+$", redis) else redis.rstrip("/")


def services_problem(pg_url: str, redis_base: str, redis_db: int) -> str | None:
    """What keeps PostgreSQL or Redis from being used (None: both answer)."""
    try:
        import psycopg

        psycopg.connect(pg_url, connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means: not usable
        said = str(exc).strip().splitlines()
        return f"PostgreSQL does not answer at {pg_url}: {said[0] if said else type(exc).__name__}"
    try:
        import redis

        redis.from_url(f"{redis_base}/{redis_db}", socket_connect_timeout=3).ping()
    except Exception as exc:  # noqa: BLE001
        return f"Redis does not answer at {redis_base}: {exc}"
    return None


class RedisService:
    """One database number of a Redis server: flushed, and the server stopped and started."""

    def __init__(self, base: str, db: int):
        parsed = urlparse(base)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 6379
        self.url = f"{base}/{db}"

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.from_url(self.url, socket_connect_timeout=1).ping())
        except Exception:  # noqa: BLE001
            return False

    def flush(self) -> None:
        import redis

        redis.from_url(self.url).flushdb()  # our database number only

    def stop(self) -> None:
        subprocess.run(
            ["redis-cli", "-h", self.host, "-p", str(self.port), "shutdown", "nosave"],
            capture_output=True,
            timeout=10,
        )
        for _ in range(50):
            if not self.answers():
                return
            time.sleep(0.1)

    def start(self) -> None:
        if self.answers():
            return
        subprocess.run(REDIS_START, capture_output=True, timeout=10)
        for _ in range(100):
            if self.answers():
                return
            time.sleep(0.1)
        raise RuntimeError("Redis did not come back: start it with " + " ".join(REDIS_START))


# ---------------------------------------------------------------- an installation


class Installation:
    """A throwaway installation, the fake Messages server its runs talk to and the clusters that
    run them; tear_down removes all of it, whatever got started."""

    def __init__(self) -> None:
        self.env: Environment | None = None
        self.redis: RedisService | None = None
        self.fake = None
        self.clusters: dict[str, QCluster] = {}

    def install(self, *, pg_url: str | None = None, redis: RedisService | None = None) -> Environment:
        """On PostgreSQL (a database of its own on `pg_url`) with the Redis broker on `redis`'s
        database, flushed first; without them, a fresh SQLite and the ORM broker."""
        self.redis = redis
        if redis is not None:
            redis.flush()
        if pg_url:
            os.environ["DATABASE_URL"] = pg_url
        else:
            os.environ.pop("DATABASE_URL", None)
        self.env = set_up(redis_url=redis.url if redis is not None else None)
        return self.env

    def serve(self, *, tagger, responder, latency: float | None = None):
        """Start the fake Messages server with this model and point run_start at it (it checks
        the key and the address)."""
        from tests.fakes.anthropic_server import FakeAnthropic

        fake = self.fake = FakeAnthropic().start()
        if latency is not None:
            fake.latency = latency
        fake.tagger = tagger
        fake.responder = responder
        # a killed or stopped worker resets its connections: not worth a traceback on the output
        fake._server.handle_error = lambda request, address: None
        os.environ.update(fake.environ(FAKE_KEY))
        return fake

    def add_cluster(self, label: str, workers: int, *, name: str, environ: dict[str, str]) -> QCluster:
        """A `manage.py qcluster` of `workers` (one already under `label` is replaced)."""
        cluster = self.clusters[label] = QCluster(self.env, workers, name=name, environ=environ)
        return cluster

    def tear_down(self, *, restart_redis: bool = False) -> None:
        """Stop the clusters and the fake server, flush Redis's database (started again first
        with `restart_redis`: a bench that stopped it leaves it running) and remove the
        installation."""
        for cluster in self.clusters.values():
            try:
                cluster.stop()
            except Exception:  # noqa: BLE001 - a killed cluster may already be gone
                pass
        if self.fake is not None:
            self.fake.close()
        try:
            if self.redis is not None:
                if restart_redis:
                    self.redis.start()
                self.redis.flush()
        finally:
            if self.env is not None:
                self.env.cleanup()
