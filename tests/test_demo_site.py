"""Tiny Press, the demo's public toy site: mounted only while the demo is on, and storing nothing
on the server for its visitors (their stories live in one signed, bounded cookie)."""

import json
import os
import random
import string
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.core import signing
from django.db import connection
from django.test import Client
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule

from demo_site.views import COOKIE, COOKIE_SALT, MAX_COOKIE_BYTES, MAX_STORIES, VISITOR_SECONDS
from runs.apps import SESSIONS_SCHEDULE

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.urls import Resolver404, resolve
try:
    resolve("/demo-site/")
    mounted = True
except Resolver404:
    mounted = False
print(json.dumps({"setting": settings.RYSH_DEMO_SITE, "mounted": mounted}))
"""


def probe(tmp_path, **env) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in ("RYSH_RECIPES_REPO", "RYSH_DEMO_SITE")}
    environ.update(DJANGO_SETTINGS_MODULE="rysh_site.settings", RYSH_DATA_DIR=str(tmp_path), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environ, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_it_is_mounted_for_the_demo_and_not_for_a_teams_own_recipes(tmp_path):
    assert probe(tmp_path) == {"setting": True, "mounted": True}  # make run: the seeded demo repository
    assert probe(tmp_path, RYSH_RECIPES_REPO="/srv/recipes.git") == {"setting": False, "mounted": False}
    assert probe(tmp_path, RYSH_RECIPES_REPO="/srv/recipes.git", RYSH_DEMO_SITE="true")["mounted"] is True
    assert probe(tmp_path, RYSH_DEMO_SITE="false")["mounted"] is False


@pytest.mark.django_db
def test_reading_creates_no_session(client):
    for url in ("/demo-site/", "/demo-site/stories/"):
        assert client.get(url).status_code == 200
    assert Session.objects.count() == 0
    assert "sessionid" not in client.cookies


def stories_of(client) -> list[dict]:
    return signing.loads(client.cookies[COOKIE].value, salt=COOKIE_SALT)


def rows() -> int:
    """Rows in every table of the database: what visitors could grow."""
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
        return sum(cursor.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)


def noise(n: int) -> str:
    """Text that does not compress."""
    return "".join(random.Random(n).choices(string.ascii_letters + string.digits, k=n))


@pytest.mark.django_db
def test_anonymous_posts_store_nothing_on_the_server():
    before = rows()
    for number in range(30):
        visitor = Client()  # a new visitor each time, as a flood without cookies would be
        response = visitor.post("/demo-site/", {"title": f"Flood {number}", "body": "x" * 20_000})
        assert response.status_code == 302
        assert "sessionid" not in visitor.cookies
    assert Session.objects.count() == 0 and rows() == before


@pytest.mark.django_db
def test_a_visitor_keeps_the_newest_stories_in_one_bounded_cookie_for_a_day(client):
    for number in range(1, MAX_STORIES + 6):
        response = client.post("/demo-site/", {"title": f"Story {number}", "body": "text"})
        assert response.status_code == 302
    titles = [story["title"] for story in stories_of(client)]
    assert len(titles) == MAX_STORIES and titles[0] == "Story 6" and titles[-1] == f"Story {MAX_STORIES + 5}"
    cookie = client.cookies[COOKIE]
    assert cookie["max-age"] == VISITOR_SECONDS and cookie["httponly"] and cookie["path"] == "/demo-site/"
    assert cookie["samesite"] == "Lax"
    listing = client.get("/demo-site/stories/").content.decode()
    assert "Story 6" in listing and "Story 5<" not in listing
    assert client.post(f"/demo-site/stories/{MAX_STORIES + 5}/publish/").status_code == 302
    assert client.get(f"/demo-site/p/{MAX_STORIES + 5}/").status_code == 200
    assert Session.objects.count() == 0


@pytest.mark.django_db
def test_long_stories_push_the_oldest_out_and_one_too_long_to_fit_is_refused(client):
    for number in range(1, 6):
        assert client.post("/demo-site/", {"title": f"Long {number}", "body": noise(1000 + number)}).status_code == 302
        assert len(client.cookies[COOKIE].value) <= MAX_COOKIE_BYTES
    kept = [story["title"] for story in stories_of(client)]
    assert kept[-1] == "Long 5" and "Long 1" not in kept  # the oldest went first
    refused = client.post("/demo-site/", {"title": "Huge", "body": noise(20_000)})
    assert refused.status_code == 400 and "too long for Tiny Press" in refused.content.decode()
    assert COOKIE not in refused.cookies  # the shelf is left as it was
    assert [story["title"] for story in stories_of(client)] == kept


@pytest.mark.django_db
def test_a_forged_or_day_old_cookie_holds_no_stories(client):
    client.cookies[COOKIE] = signing.dumps([{"id": 1, "title": "Mine", "body": "b", "published": True}], salt="other")
    assert client.get("/demo-site/p/1/").status_code == 404
    with mock.patch("django.core.signing.time.time", return_value=time.time() - VISITOR_SECONDS - 60):
        old = signing.dumps([{"id": 1, "title": "Old", "body": "b", "published": True}], salt=COOKIE_SALT)
    client.cookies[COOKIE] = old
    assert client.get("/demo-site/p/1/").status_code == 404
    client.cookies[COOKIE] = signing.dumps(
        [{"id": 1, "title": "Fresh", "body": "b", "published": True}], salt=COOKIE_SALT
    )
    assert "Fresh" in client.get("/demo-site/p/1/").content.decode()


@pytest.mark.django_db
def test_expired_sessions_are_cleared_every_hour_by_the_workers():
    session = SessionStore()
    session["who"] = "a login"
    session.create()
    Session.objects.update(expire_date=timezone.now() - timedelta(minutes=1))
    schedule = Schedule.objects.get(name=SESSIONS_SCHEDULE)
    assert schedule.schedule_type == Schedule.HOURLY
    import_string(schedule.func)(*eval(f"({schedule.args},)"))  # as django-q2 calls it
    assert Session.objects.count() == 0
