"""YAML the parser cannot read is reported where the mistake starts, with the field of that
line: an unclosed quote at the line that opens it, not at the end where PyYAML gave up."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from catalogue.recipe import RecipeError, parse_recipe
from catalogue.recipe.reader import key_path


def error_of(text: str, path: str = "broken.md") -> str:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=path, kind="task")
    return str(caught.value)


def test_an_unclosed_quote_is_reported_at_the_line_that_opens_it():
    text = '---\ndescription: "Publish the article\nmodel: claude-sonnet-4-6\n---\nPublish it.\n'
    assert error_of(text) == "broken.md:2 description: unclosed quoted string"


# (frontmatter lines, file line, field, message fragment)
CASES = [
    pytest.param(
        'loop:\n  while:\n    prompts:\n      until: "The list\n      iterate_with: go on\n',
        5,
        "loop.while.prompts.until",
        "unclosed quoted string",
        id="nested-unclosed-quote",
    ),
    pytest.param("description: 'A task\n", 2, "description", "unclosed quoted string", id="single-quote"),
    pytest.param(
        "loop:\n  do:\n    interval: 5\n   max_iterations: 3\n",
        5,
        "loop.do.max_iterations",
        "bad indentation",
        id="bad-indentation",
    ),
    pytest.param("loop:\n\tdo:\n    interval: 5\n", 3, "loop.do", "indent with spaces", id="tab"),
    pytest.param(
        "args: [topic, city\nmodel: x\n", 2, "args", "the [ opened on this line is not closed", id="unclosed-list"
    ),
    pytest.param(
        "description: A task\nloop:\n  while:\n    prompts:\n      until: >\n        Status: DONE\n"
        "      iterate_with: 'go\n",
        8,
        "loop.while.prompts.iterate_with",
        "unclosed quoted string",
        id="after-a-folded-text",
    ),
]


@pytest.mark.parametrize("frontmatter, line, field, fragment", CASES)
def test_it_names_the_line_and_field_where_the_yaml_goes_wrong(frontmatter, line, field, fragment):
    [message] = error_of(f"---\n{frontmatter}---\nDo it.\n").splitlines()
    where, _, rest = message.partition(" ")
    assert where.split(":")[:2] == ["broken.md", str(line)], message
    assert rest.startswith(f"{field}: "), message
    assert fragment in rest, message


def test_a_line_without_a_key_is_the_frontmatter():
    assert key_path(['"q q":', "  - r: 1", "    s: [2"], 2) == "q q.s"
    assert key_path(["loop:", "  - [a", ""], 1) is None
    assert key_path(["a: 1"], 5) is None


KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6)
TREES = st.recursive(
    st.integers(0, 9), lambda inner: st.dictionaries(KEYS, inner, min_size=1, max_size=3), max_leaves=12
)


def _paths(tree, prefix=()):
    """The dotted path of every key, in the order yaml.safe_dump writes them (sorted)."""
    for key in sorted(tree):
        yield ".".join((*prefix, key))
        if isinstance(tree[key], dict):
            yield from _paths(tree[key], (*prefix, key))


@given(st.dictionaries(KEYS, TREES, min_size=1, max_size=4))
def test_key_path_reads_the_field_of_every_line_of_block_yaml(tree):
    lines = yaml.safe_dump(tree, default_flow_style=False).splitlines()
    assert [key_path(lines, row) for row in range(len(lines))] == list(_paths(tree))


@given(st.lists(st.text(max_size=30), max_size=8), st.integers(-2, 10))
def test_key_path_never_raises(lines, row):
    assert key_path(lines, row) == key_path(lines, row)


def test_a_hostile_line_is_read_in_linear_time():
    # a backtracking pattern took minutes on this; the recipe cap allows lines this long
    assert key_path(["a" + " " * 200_000 + "x", "b: 1"], 1) == "b"
