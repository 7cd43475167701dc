"""What the browser tests share: BrowserTools on a throwaway profile folder, closed after the test."""

import pytest

from agents.browser import BrowserTools


@pytest.fixture
def make_tools(tmp_path, settings):
    opened = []

    def make(profile="p1", **options):
        options.setdefault("executable", settings.RYSH_CHROMIUM)
        tools = BrowserTools(
            profile=profile, profiles_root=tmp_path / "profiles", output_dir=tmp_path / "results", **options
        )
        opened.append(tools)
        return tools

    yield make
    for tools in opened:
        tools.close()
