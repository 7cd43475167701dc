"""The sandbox as the settings make it (runs.wiring.sandbox_config; docs/coding-loops.md, "The
sandbox"): what a command cannot see, and its limits. Real bubblewrap, the real project folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.conf import settings

from agents.sandbox import Sandbox, interpreter_binds
from runs.wiring import sandbox_config


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    return folder


def test_a_command_cannot_read_the_dashboards_own_folder(copy):
    """The project folder holds what honcho loads (`.env`: the API key, the database URL), the
    settings and, by default, the data folder: a command sees it empty."""
    project = Path(settings.BASE_DIR)
    assert (project / "manage.py").is_file()  # what the command must not read is there
    box = Sandbox(copy, config=sandbox_config())

    result = box.run(f"cat {project}/manage.py {project}/pyproject.toml; ls -A {project}", cwd=copy, timeout=20)

    assert result.stdout == ""
    assert result.stderr.count("No such file or directory") == 2
    assert str(project) in {str(Path(folder)) for folder in sandbox_config().hidden}


def test_the_workers_virtualenv_inside_the_project_folder_comes_back_alone(copy, settings):
    """A virtualenv in the project folder (`.venv`, as `make install` makes it) is what the
    setup's forwarder and a stdio server written in Python may need: it comes back read-only,
    nothing else of the folder does."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a virtualenv")
    venv = Path(sys.prefix).resolve()
    settings.BASE_DIR = venv.parent  # the project folder that holds the virtualenv
    config = sandbox_config()
    binds = interpreter_binds(config)
    assert (venv, venv) in binds
    box = Sandbox(copy, config=config, readonly=binds)

    result = box.run(
        f"{venv}/bin/python -c 'import django; print(django.__name__)'; ls -A {venv.parent}", cwd=copy, timeout=20
    )

    assert result.stdout.split() == ["django", venv.name]  # the virtualenv, and nothing beside it
    assert result.exit_status == 0, result.stderr


def test_a_command_has_the_memory_and_copy_limits_of_the_settings(copy, settings):
    settings.RYSH_SANDBOX_MEMORY_MB = 512
    settings.RYSH_WORKSPACE_MAX_MB = 300
    config = sandbox_config()

    result = Sandbox(copy, config=config).run("df -k /tmp | tail -n 1", cwd=copy, timeout=20)

    assert (config.memory_mb, config.workspace_mb) == (512, 300)
    assert result.stdout.split()[1] == str(256 * 1024)
