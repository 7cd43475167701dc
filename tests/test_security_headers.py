"""The Content-Security-Policy on every response, and RYSH_HTTPS for a dashboard behind a proxy
that terminates TLS."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rysh_site.headers import POLICY

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/login/", "/", "/demo-site/", "/static/js/controls.js", "/no-such-page/"])
def test_every_response_carries_the_policy(client, url):
    response = client.get(url)
    assert response.headers["Content-Security-Policy"] == POLICY
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_the_policy_runs_only_this_sites_scripts():
    directives = dict(d.split(" ", 1) for d in POLICY.split("; "))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"  # inline <style> refused; style attributes allowed
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe-eval" not in POLICY


def test_no_template_has_inline_script_or_handlers():
    """What the policy would refuse is caught here, before a browser meets it."""
    offenders = []
    for template in ROOT.glob("**/templates/**/*.html"):
        if ".venv" in template.parts:
            continue
        text = template.read_text()
        for bad in ("<script>", "<style", " onclick=", " onsubmit=", " onload=", " onerror=", "hx-on", "javascript:"):
            if bad in text:
                offenders.append(f"{template.relative_to(ROOT)}: {bad.strip()}")
    assert offenders == []


def deploy_check(**env) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("RYSH_HTTPS", "RYSH_HSTS"))}
    environ.update(DJANGO_SETTINGS_MODULE="rysh_site.settings", **env)
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "CRITICAL"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


def test_rysh_https_makes_cookies_secure_and_sends_hsts(tmp_path):
    plain = deploy_check(RYSH_DATA_DIR=str(tmp_path))
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in plain  # no HSTS, no redirect, cookies not secure: said by Django's own check
    behind_tls = deploy_check(RYSH_DATA_DIR=str(tmp_path), RYSH_HTTPS="true")
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning not in behind_tls


def test_behind_a_tls_proxy_requests_are_secure_and_get_hsts(client, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 600
    plain = client.get("/login/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    secure = client.get("/login/", headers={"X-Forwarded-Proto": "https"})
    assert secure.status_code == 200 and secure["Strict-Transport-Security"] == "max-age=600"
