"""Starting a run from its form, and the form's dry-run preview (Django test client)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from budgets.units import BOOK, PAGE
from catalogue.sync import recipes_sync
from runs.models import Run
from spend.services import quota_set
from tests.conftest import SCRIPT
from tests.recipes_git import login, make_user, work  # noqa: F401

pytestmark = pytest.mark.django_db

WITH_ARGS = """---
description: A digest of a topic
args: [topic, audience]
loop:
  do:
    budget:
      size: 20p
---
Write a digest of {{topic}} for {{audience}}.
"""


@pytest.fixture
def digest(work, settings, tmp_path):
    """A catalogued recipe with two arguments and a script, so it runs on the scripted model."""
    work.commit("Digest", tasks__digest=WITH_ARGS)
    (work.path / ".rysh/automations/tasks/digest.script.yaml").write_text(SCRIPT)
    settings.RYSH_PROVIDER = "scripted"
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    recipes_sync()
    return "/recipes/task/digest/run/"


@pytest.fixture
def web_digest(digest, work):
    """The same recipe as a web recipe: only a browser has a head to show or hide."""
    work.commit("Digest on the web", webs__digest=WITH_ARGS)
    (work.path / ".rysh/automations/webs/digest.script.yaml").write_text(SCRIPT)
    recipes_sync()
    return "/recipes/web/digest/run/"


@pytest.fixture
def operator(client):
    return login(client, make_user("otto", role="operator"))


def test_it_shows_a_field_per_argument_and_no_headless_box_without_a_browser(operator, digest):
    page = operator.get(digest).content.decode()
    assert page.count('name="arg_') == 2
    assert 'name="arg_0"' in page and 'name="arg_1"' in page and "required" in page
    assert "topic" in page and "audience" in page
    assert 'name="headless"' not in page and "headless" not in page.partition('id="run-form"')[2]


def test_a_web_recipes_form_has_headless_ticked(operator, web_digest):
    page = operator.get(web_digest).content.decode()
    assert 'type="checkbox" name="headless"' in page and "checked" in page


def test_it_starts_a_run_with_the_arguments_as_typed(operator, digest):
    response = operator.post(digest, {"arg_0": " unattended agents ", "arg_1": "editors"})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.args == [" unattended agents ", "editors"] and run.headless is True


def test_a_task_run_stays_headless_whatever_the_post_says(operator, digest):
    operator.post(digest, {"arg_0": "agents", "arg_1": "editors"})  # no box: nothing to untick
    assert Run.objects.get().headless is True


def test_a_web_run_runs_headed_when_headless_is_unticked(operator, web_digest):
    operator.post(web_digest, {"arg_0": "agents", "arg_1": "editors"})  # a browser sends no unticked box
    assert Run.objects.get().headless is False


def test_it_refuses_an_empty_argument_beside_its_field_and_keeps_the_rest(operator, web_digest):
    response = operator.post(web_digest, {"arg_0": "agents", "arg_1": ""})
    page = response.content.decode()
    assert response.status_code == 400 and Run.objects.count() == 0
    assert 'id="id_arg_1_error"' in page and "This field is required." in page
    assert 'value="agents"' in page  # what the user typed is still there
    assert 'name="headless"' in page and "checked" not in page  # unticked stays unticked


def test_it_refuses_a_missing_argument(operator, digest):
    response = operator.post(digest, {"arg_0": "agents", "headless": "on"})
    assert response.status_code == 400 and Run.objects.count() == 0
    assert "This field is required." in response.content.decode()


def test_it_shows_a_refusal_of_the_service_above_the_form(operator, digest, settings, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings.RYSH_PROVIDER = "anthropic"
    response = operator.post(digest, {"arg_0": "agents", "arg_1": "editors", "headless": "on"})
    page = response.content.decode()
    assert response.status_code == 400 and Run.objects.count() == 0
    assert 'id="run-error"' in page and "ANTHROPIC_API_KEY is not set" in page
    assert 'value="editors"' in page


def test_it_previews_the_plan_before_every_argument_is_filled(operator, digest):
    response = operator.post(digest + "preview/", {"arg_0": "agents", "arg_1": ""}, HTTP_HX_REQUEST="true")
    part = response.content.decode()
    assert response.status_code == 200 and Run.objects.count() == 0
    assert "dry run: task/digest" in part and "Write a digest of agents for ." in part
    assert "<html" not in part


def test_it_lets_a_viewer_preview_but_not_run(client, digest):
    login(client, make_user("vera", role="viewer"))
    assert client.get(digest).status_code == 403
    assert client.post(digest, {"arg_0": "a", "arg_1": "b"}).status_code == 403
    assert client.post(digest + "preview/", {"arg_0": "a"}).status_code == 200


def test_it_shows_the_worst_case_against_each_quota_the_person_would_count_against(operator, digest):
    otto = User.objects.get(username="otto")
    quota_set(scope="installation", window="day", tokens=BOOK, dollars=None)
    quota_set(scope="user", user=otto, window="month", tokens=None, dollars=Decimal(100))
    quota_set(scope="user", user=make_user("other"), window="day", tokens=PAGE, dollars=None)  # not otto's
    page = operator.get(digest).content.decode()
    assert 'id="quota-outlook"' in page
    assert "today&#x27;s installation quota has 1b tokens left — fits" in page
    assert "this month&#x27;s quota of user otto has $100.00 left — fits" in page
    assert "user other" not in page
    part = operator.post(digest + "preview/", {"arg_0": "a", "arg_1": "b"}).content.decode()
    assert "quota: worst case 20p tokens ($0.20); this month&#x27;s quota of user otto has $100.00 left" in part


def test_it_says_nothing_of_quotas_when_none_applies(operator, digest):
    assert 'id="quota-outlook"' not in operator.get(digest).content.decode()


def test_it_warns_when_the_recipes_model_has_no_price(operator, work, settings, tmp_path):
    work.commit("New model", tasks__fresh="---\nmodel: claude-fable-5-2\n---\nWrite it.\n")
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    recipes_sync()
    page = operator.get("/recipes/task/fresh/run/").content.decode()
    assert 'id="price-warnings"' in page
    assert "model claude-fable-5-2 has no price: money shows as n/a and a dollar quota pauses its runs" in page


def test_the_preview_says_a_pinned_legacy_model_is_legacy(operator, work, settings, tmp_path):
    work.commit("Old model", tasks__old="---\nmodel: claude-opus-4-6\n---\nWrite it.\n")
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    recipes_sync()
    page = operator.post("/recipes/task/old/run/preview/", {}, HTTP_HX_REQUEST="true").content.decode()
    assert "model: claude-opus-4-6 is of the legacy 4.x generation; the current Opus is claude-opus-5-5" in page
