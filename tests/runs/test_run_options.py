"""One list of per-run overrides (runs/arming.py RUN_OPTIONS, docs/command-line.md): the `auto`
command's options and the API's schema are built from it, and arming applies each where it says."""

from __future__ import annotations

import argparse

from hypothesis import given
from hypothesis import strategies as st

from api.views.runs import StartIn
from catalogue.recipe import parse_recipe
from cli.management.commands.auto import Command
from runs.arming import OVERRIDES, RUN_OPTIONS, apply_overrides

RECIPE = """---
description: options
loop:
  do:
    max_duration: 10m
  while:
    enabled: true
    max_iterations: 2
    prompts:
      until: done
---
Do the thing.
"""


def test_it_builds_the_cli_options_from_the_table():
    parser = argparse.ArgumentParser()
    Command().add_arguments(parser)
    flags = {action.option_strings[0]: action.dest for action in parser._actions if action.option_strings}
    for option in RUN_OPTIONS:
        assert flags[option.flag] == option.dest == f"override_{option.name}"


def test_it_builds_the_api_schema_from_the_table():
    schema = StartIn.model_json_schema()
    keys = schema["properties"]["overrides"]["propertyNames"]
    named = keys.get("enum") or schema["$defs"][keys["$ref"].rsplit("/", 1)[-1]]["enum"]
    assert named == [option.name for option in RUN_OPTIONS]


def test_arming_knows_every_option_and_no_other():
    assert list(OVERRIDES) == [option.name for option in RUN_OPTIONS]


@given(passes=st.integers(min_value=1, max_value=50), steps=st.integers(min_value=1, max_value=50))
def test_an_option_lands_where_the_table_says(passes, steps):
    spec = parse_recipe(RECIPE, path="tasks/options.md", kind="task")
    armed = apply_overrides(spec, {"passes": str(passes), "steps": str(steps)})
    for option, value in (("passes", passes), ("steps", steps)):
        [row] = [o for o in RUN_OPTIONS if o.name == option]
        assert getattr(getattr(armed, row.part), row.field) == value
