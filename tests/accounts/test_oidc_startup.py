"""A misconfigured company login stops start-up with what to set: the variables themselves
(settings.py, strictly), and the issuer, whose discovery document the web server reads when it
starts (rysh_site/asgi.py) — an issuer that does not answer, or answers with something that is
not an OpenID Connect discovery document, never waits for the first login to be a 500."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from accounts.oidc import provider_check, provider_deploy_check
from rysh_site import login_env
from tests.e2e.stack import free_port

ROOT = Path(__file__).resolve().parents[2]


def start(tmp_path, **env) -> subprocess.CompletedProcess:
    """What daphne does first: import the ASGI application, in a process of its own."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RYSH_OIDC") and k != "RYSH_LOCAL_LOGIN"}
    environ.update(RYSH_DATA_DIR=str(tmp_path / "data"), DJANGO_SETTINGS_MODULE="rysh_site.settings", **env)
    return subprocess.run(
        [sys.executable, "-c", "import rysh_site.asgi"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def oidc_env(issuer: str, **more) -> dict:
    return {"RYSH_OIDC_ISSUER": issuer, "RYSH_OIDC_CLIENT_ID": "rysh", "RYSH_OIDC_CLIENT_SECRET": "s", **more}


def test_an_unreachable_issuer_stops_the_web_server_at_start(tmp_path):
    issuer = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = start(tmp_path, **oidc_env(issuer, RYSH_OIDC_TIMEOUT="2"))
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("rysh: RYSH_OIDC_ISSUER: the provider did not answer")  # one line, no traceback
    assert f"{issuer}/.well-known/openid-configuration" in last


def test_the_web_server_starts_with_a_good_issuer_and_without_one(tmp_path, provider):
    assert start(tmp_path, **oidc_env(provider.url)).returncode == 0
    assert start(tmp_path).returncode == 0  # company login off: no provider needed


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"RYSH_OIDC_ISSUER": "https://login.example.com"}, "RYSH_OIDC_ISSUER is set: set RYSH_OIDC_CLIENT_ID and"),
        (oidc_env("http://login.example.com"), "RYSH_OIDC_ISSUER: expected an https URL"),
        (oidc_env("login.example.com"), "RYSH_OIDC_ISSUER: expected the provider's issuer URL"),
        (oidc_env("https://x.example", RYSH_OIDC_ROLE_MAP="rysh-admins=root"), "RYSH_OIDC_ROLE_MAP: expected"),
        (oidc_env("https://x.example", RYSH_OIDC_SCOPES="email"), "RYSH_OIDC_SCOPES: expected openid"),
        ({"RYSH_LOCAL_LOGIN": "false"}, "need the company login: set RYSH_OIDC_ISSUER"),
        ({"RYSH_LOCAL_LOGIN": "no"}, "RYSH_LOCAL_LOGIN: expected true or false"),
    ],
)
def test_a_bad_setting_stops_start_up_naming_it(tmp_path, env, says):
    result = start(tmp_path, **env)
    assert result.returncode != 0 and says in result.stderr.strip().splitlines()[-1]


def test_the_role_map_is_read_strictly(monkeypatch):
    monkeypatch.setenv("RYSH_OIDC_ROLE_MAP", " rysh-admins = admin, /team/ops=operator ,")
    assert login_env.role_map("RYSH_OIDC_ROLE_MAP") == {"rysh-admins": "admin", "/team/ops": "operator"}
    for bad in ("rysh-admins", "=admin", "rysh-admins=superuser", "a=admin,a=viewer"):
        monkeypatch.setenv("RYSH_OIDC_ROLE_MAP", bad)
        with pytest.raises(ImproperlyConfigured, match="RYSH_OIDC_ROLE_MAP"):
            login_env.role_map("RYSH_OIDC_ROLE_MAP")


class Discovery(BaseHTTPRequestHandler):
    document: object = None
    status = 200

    def do_GET(self):  # noqa: N802
        body = json.dumps(self.document).encode() if not isinstance(self.document, bytes) else self.document
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_issuer(settings):
    """An HTTP server on loopback that answers the discovery URL with what the test says."""
    handler = type("Handler", (Discovery,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    settings.RYSH_OIDC_ISSUER, settings.RYSH_OIDC_CLIENT_ID, settings.RYSH_OIDC_CLIENT_SECRET = url, "rysh", "s"
    handler.url = url
    yield handler
    server.shutdown()
    server.server_close()


def full_document(url: str) -> dict:
    return {
        "issuer": url,
        "authorization_endpoint": f"{url}/auth",
        "token_endpoint": f"{url}/token",
        "userinfo_endpoint": f"{url}/userinfo",
        "jwks_uri": f"{url}/jwks",
        "id_token_signing_alg_values_supported": ["RS256"],
    }


def test_a_discovery_document_without_the_endpoints_is_a_start_up_error(fake_issuer):
    fake_issuer.document = {"issuer": fake_issuer.url, "authorization_endpoint": f"{fake_issuer.url}/auth"}
    with pytest.raises(ImproperlyConfigured) as error:
        provider_check()
    assert str(error.value).startswith("RYSH_OIDC_ISSUER: the discovery document at")
    assert "has no token_endpoint, jwks_uri, userinfo_endpoint" in str(error.value)


def test_a_document_for_another_issuer_says_which_to_set(fake_issuer):
    fake_issuer.document = {**full_document(fake_issuer.url), "issuer": "https://login.example.com/realms/team"}
    with pytest.raises(ImproperlyConfigured, match="set RYSH_OIDC_ISSUER=https://login.example.com/realms/team"):
        provider_check()


@pytest.mark.parametrize(
    ("status", "document", "says"), [(404, {}, "answered 404"), (200, b"<html>", "not answer with a JSON")]
)
def test_a_page_that_is_no_discovery_document_is_a_start_up_error(fake_issuer, status, document, says):
    fake_issuer.status, fake_issuer.document = status, document
    with pytest.raises(ImproperlyConfigured, match=says):
        provider_check()


def test_a_provider_signing_only_with_the_client_secret_is_refused(fake_issuer):
    fake_issuer.document = {**full_document(fake_issuer.url), "id_token_signing_alg_values_supported": ["HS256"]}
    with pytest.raises(ImproperlyConfigured, match="signs ID tokens with HS256"):
        provider_check()


def test_check_deploy_reports_it_too(fake_issuer):
    fake_issuer.document = {}
    assert [e.id for e in provider_deploy_check()] == ["accounts.E001"]
    fake_issuer.document = full_document(fake_issuer.url)
    assert provider_deploy_check() == []


def test_with_company_login_off_nothing_is_asked(settings, monkeypatch):
    monkeypatch.setattr("requests.get", lambda *a, **k: pytest.fail("no provider is asked"))
    settings.RYSH_OIDC_ISSUER = ""
    provider_check()
    assert provider_deploy_check() == []
