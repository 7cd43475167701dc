"""Browser profiles: web_login once, reused by later runs; listed and deleted from the CLI
and the dashboard; in use means untouchable."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.browser import BrowserTools
from tests.runs.test_view_runs import client_for, user_with
from tests.web_pages import PageServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def site():
    with PageServer() as server:
        yield server


@pytest.fixture
def profiles(settings, tmp_path):
    settings.RYSH_PROFILES_DIR = tmp_path / "profiles"
    return settings.RYSH_PROFILES_DIR


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def test_web_login_keeps_a_login_that_a_later_headless_run_reuses(profiles, site, settings, tmp_path):
    out = StringIO()
    call_command("web_login", "shop", site.url("/cookie/set"), "--headless", "--timeout", "0.5", stdout=out)
    assert "profile 'shop' is open at" in out.getvalue() and "now start logged in" in out.getvalue()
    with BrowserTools(
        profile="shop",
        profiles_root=profiles,
        output_dir=tmp_path / "r",
        executable=settings.RYSH_CHROMIUM,
        private_hosts=tuple(settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS),
    ) as tools:
        tools.open(site.url("/cookie/show"))
        assert "cookies: login=alice" in tools.call("read_page", {}).content


def test_the_cli_lists_and_deletes_profiles_but_never_one_in_use(profiles, site, settings, tmp_path):
    assert auto("web", "profile", "list").startswith("no browser profiles yet")
    tools = BrowserTools(
        profile="shop",
        profiles_root=profiles,
        output_dir=tmp_path / "r",
        executable=settings.RYSH_CHROMIUM,
        private_hosts=tuple(settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS),
    )
    tools.open(site.url("/cookie/set"))
    try:
        listing = auto("web", "profile", "list")
        assert "shop" in listing and "MB" in listing and listing.splitlines()[1].rstrip().endswith("yes")
        with pytest.raises(CommandError, match="in use by another run"):
            auto("web", "profile", "rm", "shop")
        with pytest.raises(CommandError, match="in use by another run"):
            call_command("web_login", "shop", "--headless", "--timeout", "0.1", stdout=StringIO())
    finally:
        tools.close()
    assert "browser profile 'shop' deleted" in auto("web", "profile", "rm", "shop")
    assert not (profiles / "shop").exists()
    with pytest.raises(CommandError, match="no browser profile 'shop'"):
        auto("web", "profile", "rm", "shop")
    with pytest.raises(CommandError, match="belong to web recipes"):
        auto("task", "profile", "list")


def test_the_dashboard_lists_profiles_and_an_operator_deletes_one(profiles):
    (profiles / "shop").mkdir(parents=True)
    (profiles / "shop" / "Cookies").write_bytes(b"secret-cookie-value")
    viewer = client_for(user_with("viewer"))
    page = viewer.get("/profiles/").content.decode()
    assert "shop" in page and "secret-cookie-value" not in page and "Delete" not in page
    assert viewer.post("/profiles/shop/delete/").status_code == 403
    operator = client_for(user_with("operator"))
    assert "Delete" in operator.get("/profiles/").content.decode()
    response = operator.post("/profiles/shop/delete/")
    assert response.status_code == 302 and not (profiles / "shop").exists()
    assert operator.post("/profiles/shop/delete/", follow=True).content.decode().count("no browser profile") == 1
