"""The scale-out path for real: PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).

Each test runs the project in a subprocess with the variables a team would set,
against the services on this machine, so the settings switch is proven, not read.
"""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.scaleout


def _manage(*args, env_extra, tmp_path):
    env = {**os.environ, "RYSH_DATA_DIR": str(tmp_path), **env_extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def fresh_database(postgres_url):
    name = f"rysh_scaleout_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_it_migrates_and_seeds_on_postgresql(fresh_database, tmp_path):
    env = {"DATABASE_URL": fresh_database}
    migrated = _manage("migrate", "--noinput", env_extra=env, tmp_path=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    seeded = _manage("seed_demo", env_extra=env, tmp_path=tmp_path)
    assert seeded.returncode == 0, seeded.stderr
    with psycopg.connect(fresh_database) as conn:
        users = conn.execute("SELECT username FROM auth_user ORDER BY username").fetchall()
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert users == [("demo",), ("operator",), ("reviewer",), ("viewer",)]
    assert "django_q_task" in tables


BROKER_ROUND_TRIP = """
import django, json, os
django.setup()
from django.conf import settings
from django_q.brokers import get_broker
from django_q.brokers.redis_broker import Redis
broker = get_broker()
broker.purge_queue()
broker.enqueue("payload-" + os.environ["MARK"])
task = broker.dequeue()[0]
broker.acknowledge(task[0])
got = task[1].decode() if isinstance(task[1], bytes) else task[1]
print(json.dumps({"broker": "Redis" if isinstance(broker, Redis) else type(broker).__name__, "got": got,
                  "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"]}))
"""


def test_it_uses_the_redis_broker_and_channel_layer(redis_url, tmp_path):
    mark = uuid.uuid4().hex
    env = {
        **os.environ,
        "RYSH_DATA_DIR": str(tmp_path),
        "REDIS_URL": redis_url,
        "MARK": mark,
        "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
    }
    result = subprocess.run(
        [sys.executable, "-c", BROKER_ROUND_TRIP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert f'"got": "payload-{mark}"' in result.stdout
    assert '"broker": "Redis"' in result.stdout  # django-q2's, or ops.health's that also leaves a heartbeat
    assert "channels_redis.core.RedisChannelLayer" in result.stdout
