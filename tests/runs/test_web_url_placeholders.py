"""A web recipe's start page written with placeholders, as rysh's published recipes do
(`url: "{{start_url}}"`, docs/web-recipes.md): read as written, filled with the run's arguments
when it starts, and refused at the start (never half-way) when what they make is no web address."""

from pathlib import Path

import pytest

from catalogue.recipe import RecipeError, parse_recipe
from runs import services
from runs.models import Run
from runs.wiring import start_url

pytestmark = pytest.mark.django_db

RECIPE = """---
description: Crawl a documentation site from its start page.
url: "{{start_url}}"
web_read: text
args: [start_url]
step:
  interval: 50
  max_iterations: 200
  max_duration: 15m
---
Check the links of {{start_url}}.
"""


def write(tmp_path: Path, text: str = RECIPE) -> Path:
    path = tmp_path / ".rysh/automations/webs/link-check.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_url_made_of_placeholders_is_read_as_written_and_a_broken_one_refused():
    spec = parse_recipe(RECIPE, path=".rysh/automations/webs/link-check.md")
    assert spec.url == "{{start_url}}"
    with pytest.raises(RecipeError, match=r"link-check.md:3 url: expected a web address"):
        parse_recipe(RECIPE.replace('"{{start_url}}"', '"see {{start_url}}"'), path="webs/link-check.md", kind="web")
    with pytest.raises(RecipeError, match=r"link-check.md:3 url: expected a web address"):
        parse_recipe(RECIPE.replace('"{{start_url}}"', "docs.example.com"), path="webs/link-check.md", kind="web")


def test_the_start_fills_it_and_refuses_what_is_no_web_address(tmp_path, settings):
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    settings.RYSH_RECIPES_REPO = str(tmp_path)
    path = str(write(tmp_path))
    dry = services.run_start(
        kind="web", name_or_path=path, args=["https://docs.example.com/"], provider="scripted", dry_run=True
    )
    assert any("start page https://docs.example.com/," in line for line in dry.lines)
    with pytest.raises(services.RunRefused, match=r"web/link-check: url: '\{\{start_url\}\}' filled with .* is 'docs'"):
        services.run_start(kind="web", name_or_path=path, args=["docs"], provider="scripted", dry_run=True)
    assert not Run.objects.exists()


def test_the_browser_opens_the_filled_page(tmp_path, settings):
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    settings.RYSH_RECIPES_REPO = str(tmp_path)
    path = write(tmp_path)
    path.with_name("link-check.script.yaml").write_text("passes:\n  - task:\n      - Done.\n")
    run = services.run_start(
        kind="web", name_or_path=str(path), args=["https://docs.example.com/a"], provider="scripted"
    )
    spec = parse_recipe(run.recipe_text, path=run.recipe_path, kind="web")
    assert start_url(run, spec) == "https://docs.example.com/a"
