"""Every page needs a login (DEVELOPERS.md, Security by default): each URL the project routes,
asked for by a stranger, sends them to the login page (or, under /api/, answers 401) — except the
few that are public on purpose, listed here with why. A new page that forgets its decorator fails."""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

PUBLIC = {
    "login/": "the login page itself",
    "logout/": "logging out (POST only)",
    "hooks/git/": "forges cannot log in: the push hook checks a signature instead (POST only)",
    "oidc/": "the company login's own steps (when configured)",
    "healthz": "the liveness probe: answers {status: ok}, reads nothing",
    "readyz": "the readiness probe: fixed words per check, no counts, names or exception text",
    "metrics": "the Prometheus scrape: 404 unless RYSH_METRICS=true, then a bearer token and/or an allow-list",
}
SAMPLE = {"int": "1", "str": "x", "slug": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000000"}


def routes(resolver=None, prefix: str = "") -> list[str]:
    """Every routed URL, its converters filled with sample values (regex routes skipped)."""
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = str(entry.pattern)
        if pattern.startswith("^"):
            continue  # a regex route (the admin's, static files): not ours to check here
        text = re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLE.get(m.group(1) or "str", "x"), pattern)
        if isinstance(entry, URLResolver):
            found += routes(entry, prefix + text)
        elif isinstance(entry, URLPattern):
            found.append(prefix + text)
    return found


def test_it_finds_the_project_s_pages():
    found = routes()
    assert {"", "history/", "api/runs", "account/tokens/", "hooks/git/"} <= set(found)


def test_a_stranger_is_sent_to_log_in_everywhere_but_the_public_pages(client):
    open_ = []
    for url in routes():
        if any(url.startswith(public) for public in PUBLIC) or url.startswith(("admin/", "demo-site/")):
            continue  # the admin has its own login page; Tiny Press is the public demo site
        answer = client.get("/" + url)
        if url == "api/":
            ok = answer.status_code == 404  # nothing lives at the API's root
        elif url.startswith("api/") and not url.startswith(("api/docs", "api/openapi")):
            if answer.status_code == 405:  # a POST-only endpoint: ask as it would be asked
                answer = client.post("/" + url, content_type="application/json", data={})
            ok = answer.status_code == 401
        else:
            ok = answer.status_code == 302 and answer["Location"].startswith("/login/")
        if not ok:
            open_.append(f"/{url}: {answer.status_code}")
    assert open_ == [], "\n".join(open_)
