"""The editor's starter recipes are markdown files in reviews/starters/, each a valid recipe."""

from __future__ import annotations

import pytest

from catalogue.recipe import parse_recipe, unfilled_placeholders
from catalogue.spec import Kind
from reviews.starters import FOLDER, STARTERS, TEMPLATES


@pytest.mark.parametrize("key", list(STARTERS))
def test_it_parses_every_starter_as_a_valid_recipe_of_its_kind(key):
    starter = STARTERS[key]
    spec = parse_recipe(starter.text, path=f".rysh/automations/{starter.kind.folder}/{key}.md", kind=starter.kind)
    assert spec.kind is starter.kind
    assert spec.prompt and spec.description
    assert unfilled_placeholders(spec, None) == []  # every {{...}} in a starter is filled


def test_it_reads_each_starter_from_its_markdown_file():
    assert sorted(path.stem for path in FOLDER.glob("*.md")) == sorted(STARTERS)
    for key, starter in STARTERS.items():
        assert starter.text == (FOLDER / f"{key}.md").read_text(encoding="utf-8")
        assert starter.text.startswith("---\n") and starter.text.endswith("\n")


def test_it_has_a_default_starter_named_after_each_kind():
    """The editor opens a new web recipe on the `web` starter and a new task on `task`."""
    for kind in Kind:
        assert STARTERS[kind].kind is kind


def test_it_keeps_the_editors_shape_of_title_then_text():
    title, text, _kind = TEMPLATES["task"]
    assert (title, text) == ("A task", STARTERS["task"].text)
