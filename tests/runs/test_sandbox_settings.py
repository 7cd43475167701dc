"""The sandbox as the settings make it (runs.wiring.sandbox_config; docs/coding-loops.md, "The
sandbox"): a command's limits. Real bubblewrap."""

from __future__ import annotations

import pytest

from agents.sandbox import Sandbox
from runs.wiring import sandbox_config


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    return folder


def test_a_command_has_the_memory_and_copy_limits_of_the_settings(copy, settings):
    settings.RYSH_SANDBOX_MEMORY_MB = 512
    settings.RYSH_WORKSPACE_MAX_MB = 300
    config = sandbox_config()

    result = Sandbox(copy, config=config).run("df -k /tmp | tail -n 1", cwd=copy, timeout=20)

    assert (config.memory_mb, config.workspace_mb) == (512, 300)
    assert result.stdout.split()[1] == str(256 * 1024)
