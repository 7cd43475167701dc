import os
import socket
import textwrap
from pathlib import Path

import pytest
from django.core.cache import cache

from runs import services, worker
from runs.wiring import arm_run

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


@pytest.fixture(autouse=True)
def snapshots_root(settings, tmp_path):
    """Result snapshots (runs/snapshots.py) of every test land in its own folder, never .data/."""
    settings.RYSH_SNAPSHOTS_DIR = tmp_path / "snapshots"
    return settings.RYSH_SNAPSHOTS_DIR


# -- runs of task recipes on the scripted provider (shared by the runs and schedules tests) --

SCRIPT = 'passes:\n  - task:\n      - text: Done.\n    judge: "YES\\nok"\n'

# one pass, no loop: a run that saves summary.md and is done (for `start`)
ONE_PASS = """
    ---
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
    ---
    Write the summary to summary.md.
"""


@pytest.fixture
def results_root(settings, tmp_path):
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    settings.RYSH_RECIPES_REPO = str(tmp_path / "repo")
    return settings.RYSH_RESULTS_DIR


@pytest.fixture
def recipe_file(tmp_path, results_root):
    """Write a task recipe (with a stub script beside it, so the scripted provider is chosen;
    `script=None`: none, so the run talks to Claude)."""

    def write(text: str, name: str = "job", *, script: str | None = SCRIPT) -> Path:
        folder = tmp_path / "repo/.rysh/automations/tasks"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.md"
        path.write_text(textwrap.dedent(text).lstrip())
        if script is not None:
            (folder / f"{name}.script.yaml").write_text(script)
        return path

    return write


@pytest.fixture
def catalogued(recipe_file, settings, db):
    """recipe_file, then committed and synced: a recipe of the catalogue, which is all the web,
    the API and MCP run (a file runs only from the command line)."""
    from catalogue.sync import recipes_sync
    from tests.recipes_git import git

    def write(text: str, name: str = "job", **options) -> Path:
        path = recipe_file(text, name, **options)
        repo = Path(settings.RYSH_RECIPES_REPO)
        if not (repo / ".git").exists():
            git(repo, "init", "-q", "-b", settings.RYSH_RECIPES_BRANCH)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"recipe {name}")
        recipes_sync()
        return path

    return write


@pytest.fixture
def start(recipe_file, db):
    def start(text: str, *args: str, name: str = "job", **options):
        path = recipe_file(text, name)
        return services.run_start(kind="task", name_or_path=str(path), args=list(args), provider="scripted", **options)

    return start


def drive(run, model):
    """Execute a queued run in this process with `model` in place of the provider."""

    worker.execute(run.pk, lambda r: arm_run(r, model=model))
    run.refresh_from_db()
    return run


@pytest.fixture(autouse=True)
def workspaces_root(settings, tmp_path):
    """Working copies of coding runs (workspaces/) land in the test's own folder, never .data/."""
    settings.RYSH_WORKSPACES_DIR = tmp_path / "workspaces"
    return settings.RYSH_WORKSPACES_DIR


@pytest.fixture
def fresh_cache():
    """An empty Django cache before and after (the Models API list is cached there)."""
    cache.clear()
    yield
    cache.clear()
