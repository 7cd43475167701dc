"""Tiny Press, the demo's public toy site: mounted only while the demo is on, and bounded in what
it stores for anonymous visitors."""

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule

from demo_site.views import ANONYMOUS_SESSION_SECONDS, MAX_STORIES, SESSION_KEY
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


@pytest.mark.django_db
def test_a_visitor_keeps_the_newest_stories_for_a_day(client):
    for number in range(1, MAX_STORIES + 6):
        response = client.post("/demo-site/", {"title": f"Story {number}", "body": "text"})
        assert response.status_code == 302
    assert Session.objects.count() == 1
    data = Session.objects.get().get_decoded()
    titles = [story["title"] for story in data[SESSION_KEY]]
    assert len(titles) == MAX_STORIES and titles[0] == "Story 6" and titles[-1] == f"Story {MAX_STORIES + 5}"
    assert client.session.get_expiry_age() == ANONYMOUS_SESSION_SECONDS
    listing = client.get("/demo-site/stories/").content.decode()
    assert "Story 6" in listing and "Story 5<" not in listing
    assert client.post(f"/demo-site/stories/{MAX_STORIES + 5}/publish/").status_code == 302
    assert client.get(f"/demo-site/p/{MAX_STORIES + 5}/").status_code == 200


@pytest.mark.django_db
def test_expired_sessions_are_cleared_every_hour_by_the_workers(client):
    client.post("/demo-site/", {"title": "Old", "body": "text"})
    Session.objects.update(expire_date=timezone.now() - timedelta(minutes=1))
    schedule = Schedule.objects.get(name=SESSIONS_SCHEDULE)
    assert schedule.schedule_type == Schedule.HOURLY
    import_string(schedule.func)(*eval(f"({schedule.args},)"))  # as django-q2 calls it
    assert Session.objects.count() == 0
