"""Company login in Chromium: a rysh of its own (daphne on loopback, with RYSH_OIDC_* pointing
at a real OpenID Connect provider the test starts on loopback), "Log in with Test IdP", the
provider's page, and back on the dashboard with the role the person's group gives."""

from __future__ import annotations

import pytest

from tests.accounts.oidc_provider import running_provider
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e


@pytest.fixture
def no_active_runs_after():
    """This test starts no run and has no worker: nothing to clean up (and no shared stack needed)."""
    yield


@pytest.fixture(scope="module")
def idp():
    with running_provider() as provider:
        yield provider


@pytest.fixture(scope="module")
def company_stack(idp, tmp_path_factory):
    env = {
        "RYSH_OIDC_ISSUER": idp.url,
        "RYSH_OIDC_CLIENT_ID": "rysh-e2e",
        "RYSH_OIDC_CLIENT_SECRET": "e2e-secret",
        "RYSH_OIDC_NAME": "Test IdP",
        "RYSH_OIDC_ROLE_MAP": "rysh-admins=admin,rysh-ops=operator",
        "RYSH_LOCAL_LOGIN": "false",
        "RYSH_BREAK_GLASS_USERS": "demo",
    }
    stack = Stack(tmp_path_factory.mktemp("rysh-oidc-e2e"), extra_env=env)
    try:
        stack.manage("migrate", "--noinput")
        stack.start_web()
    except Exception:
        stack.stop()
        raise
    yield stack
    stack.stop()


def test_a_person_logs_in_with_the_company_login_and_gets_their_groups_role(company_stack, idp, browser):
    idp.set_user("carol-sub", preferred_username="carol", email="carol@example.com", groups=["rysh-ops", "sales"])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(20_000)
    refused: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: "Content Security Policy" in m.text and refused.append(m.text))
        page.goto(f"{company_stack.url}/")
        page.wait_for_url("**/login/?next=/")
        assert page.get_by_text("Password logins are turned off here").is_visible()
        page.get_by_role("link", name="Log in with Test IdP").click()

        page.wait_for_url(f"{idp.url}/oauth2/authorize?**")  # the provider's own page
        page.fill("input[name=sub]", "carol-sub")
        page.get_by_role("button", name="Authorize").click()

        page.wait_for_url(f"{company_stack.url}/")
        assert page.locator("form.who a").inner_text() == "carol"
        # an operator's navigation: the audit log (operators and admins), deliveries but not channels
        assert page.get_by_role("link", name="Audit").is_visible()
        assert page.locator("nav a[href='/notifications/deliveries/']").count() == 1
        assert page.locator("nav a[href='/notifications/']").count() == 0
    finally:
        context.close()
    assert not refused, refused
    roles = company_stack.query("""
        from django.contrib.auth.models import User
        from audit.models import AuditEntry
        user = User.objects.get(username="carol")
        print(json.dumps({"groups": sorted(user.groups.values_list("name", flat=True)),
                          "login": AuditEntry.objects.filter(action="auth.login", actor=user).values_list("detail", flat=True).first()}))""")
    assert roles == {"groups": ["operator"], "login": {"via": "oidc"}}
