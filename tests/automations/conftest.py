import textwrap
from pathlib import Path

import pytest

from automations import engine, services
from automations.tasks import arm_run

SCRIPT = "passes:\n  - task:\n      - text: Done.\n    judge: \"YES\\nok\"\n"


@pytest.fixture
def results_root(settings, tmp_path):
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    settings.RYSH_RECIPES_REPO = str(tmp_path / "repo")
    return settings.RYSH_RESULTS_DIR


@pytest.fixture
def recipe_file(tmp_path, results_root):
    """Write a task recipe (with a stub script beside it, so the scripted provider is chosen)."""

    def write(text: str, name: str = "job") -> Path:
        folder = tmp_path / "repo/.rysh/automations/tasks"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.md"
        path.write_text(textwrap.dedent(text).lstrip())
        (folder / f"{name}.script.yaml").write_text(SCRIPT)
        return path

    return write


@pytest.fixture
def start(recipe_file, db):
    def start(text: str, *args: str, name: str = "job", **options):
        path = recipe_file(text, name)
        return services.run_start(kind="task", name_or_path=str(path), args=list(args),
                                  provider="scripted", **options)

    return start


def drive(run, model):
    """Execute a queued run in this process with `model` in place of the provider."""

    engine.execute(run.pk, lambda r: arm_run(r, model=model))
    run.refresh_from_db()
    return run
