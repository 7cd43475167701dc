import os
import socket

import pytest

POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
POSTGRES_URL = os.environ.get("RYSH_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("RYSH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _answers(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=1):
            return True
    except OSError:
        return False


def require_service(name: str, address: tuple[str, int]) -> None:
    """Skip with the reason when a scale-out service is down; under CI that is a failure."""
    if _answers(address):
        return
    message = f"{name} does not answer on {address[0]}:{address[1]}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must prove the scale-out path (.ci/run starts it)")
    pytest.skip(f"{message}; the scale-out tests need it (they are not skipped under CI=true)")


@pytest.fixture
def postgres_url():
    require_service("PostgreSQL", POSTGRES)
    return POSTGRES_URL


@pytest.fixture
def redis_url():
    require_service("Redis", REDIS)
    return REDIS_URL
