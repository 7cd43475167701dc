#!/usr/bin/env python
"""Run the engine and worker tests again on the scale-out path: PostgreSQL + the Redis broker
and channel layer. When the services do not answer this skips with the reason, except under
CI=true, where that is a failure: CI proves the scale-out path every time."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

POSTGRES = os.environ.get("RYSH_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("RYSH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
TESTS = [
    "tests/runs/test_engine.py",
    "tests/runs/test_worker.py",
    "tests/runs/test_snapshots.py",
    "tests/workspaces/test_services.py",
    "tests/spend/test_quotas.py",
    "tests/audit/test_append_only_postgresql.py",
    "tests/ops/test_retention_postgresql.py",
    "tests/audit/test_audit_retention_postgresql.py",
    "tests/test_scaleout.py",
    "tests/ops/test_metrics.py",  # the scrape's queries on PostgreSQL, the push latency through Redis
]


def answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


def main() -> int:
    down = [
        name
        for name, host, port in (("PostgreSQL", "127.0.0.1", 5432), ("Redis", "127.0.0.1", 6379))
        if not answers(host, port)
    ]
    if down:
        message = f"scale-out tests: {' and '.join(down)} do not answer on 127.0.0.1"
        if os.environ.get("CI") == "true":
            print(f"FAILED {message}; CI must prove the PostgreSQL/Redis path", file=sys.stderr)
            return 1
        print(f"SKIPPED {message} (they run whenever the services are up, and always under CI)")
        return 0
    base = POSTGRES.rsplit("/", 1)[0]
    redis_base = REDIS.rsplit("/", 1)[0]
    env = {
        **os.environ,
        "DATABASE_URL": f"{base}/rysh_scaleout",  # pytest-django creates test_rysh_scaleout
        "REDIS_URL": f"{redis_base}/14",
        "RYSH_WORKER_TEST_POSTGRES": POSTGRES,
        "RYSH_WORKER_TEST_REDIS_URL": f"{redis_base}/13",
    }
    print("scale-out tests: the engine and worker tests on PostgreSQL with the Redis broker", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", "--create-db", *TESTS, *sys.argv[1:]], env=env)


if __name__ == "__main__":
    sys.exit(main())
