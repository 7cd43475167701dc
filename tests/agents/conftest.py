"""What the browser tests share: BrowserTools on a throwaway profile folder, closed after the test.

The pages they browse are served on 127.0.0.1 (and reached as localhost too): the egress guard
refuses private addresses, so these two are allowed for them through the setting an admin would
use (RYSH_BROWSER_ALLOW_PRIVATE_HOSTS). 127.0.0.2 and the rest of loopback stay refused: the
guard's own tests listen there."""

import pytest

from agents.browser import BrowserTools

TEST_PAGE_HOSTS = ["127.0.0.1", "localhost"]


@pytest.fixture(autouse=True)
def loopback_pages_allowed(settings):
    settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS = list(TEST_PAGE_HOSTS)
    return settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS


@pytest.fixture
def make_tools(tmp_path, settings):
    opened = []

    def make(profile="p1", **options):
        options.setdefault("executable", settings.RYSH_CHROMIUM)
        options.setdefault("private_hosts", tuple(settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS))
        tools = BrowserTools(
            profile=profile, profiles_root=tmp_path / "profiles", output_dir=tmp_path / "results", **options
        )
        opened.append(tools)
        return tools

    yield make
    for tools in opened:
        tools.close()
