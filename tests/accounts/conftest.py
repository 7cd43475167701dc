import pytest

from tests.accounts.oidc_provider import running_provider

OIDC_BACKEND = "accounts.backends.OIDCBackend"
ROLE_MAP = {"rysh-admins": "admin", "rysh-ops": "operator"}


@pytest.fixture(scope="session")
def provider():
    with running_provider() as p:
        yield p


def company_login_on(settings, provider, **more) -> None:
    settings.RYSH_OIDC_ISSUER = provider.url
    settings.RYSH_OIDC_CLIENT_ID = "rysh"
    settings.RYSH_OIDC_CLIENT_SECRET = "rysh-secret"
    settings.RYSH_OIDC_NAME = "Test IdP"
    settings.RYSH_OIDC_ROLE_MAP = dict(ROLE_MAP)
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, OIDC_BACKEND]
    for name, value in more.items():
        setattr(settings, name, value)


@pytest.fixture
def oidc(settings, provider):
    provider.token_for = ""
    company_login_on(settings, provider)
    yield provider
    provider.token_for = ""
