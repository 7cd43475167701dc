"""Security review fixes: a recipe's output_dir is its own, recipes and rendered markdown are capped."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from catalogue.markdown import MAX_MARKDOWN_CHARS, render_markdown
from catalogue.recipe import MAX_RECIPE_BYTES, RecipeError, load_recipe, parse_recipe, resolve_output_dir
from catalogue.spec import RecipeSpec

WEB = ".rysh/automations/webs/x.md"
DEMO = pathlib.Path(__file__).resolve().parents[2] / "demo" / "recipes" / ".rysh" / "automations"


def _recipe(output_dir: str) -> str:
    return f"---\noutput_dir: {output_dir}\n---\nDo the thing.\n"


def _only_issue(text: str, path: str = WEB):
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=path)
    (issue,) = caught.value.issues
    return issue


def _spec(output_dir: str) -> RecipeSpec:
    return RecipeSpec(path="x.md", kind="task", name="x", prompt="p", output_dir=output_dir)


# --- output_dir: the recipe's own folder ---------------------------------------------------


@pytest.mark.parametrize(
    ("output_dir", "why"),
    [
        (".", "the results root itself"),
        ("./", "the results root itself"),
        ("a/..", "the results root itself"),
        ("webs", "the webs folder, shared by every web recipe"),
        ("tasks/", "the tasks folder, shared by every task recipe"),
        ("webs/other/results", "the results folder of another recipe (webs/other)"),
        ("tasks/x/results", "the results folder of another recipe (tasks/x)"),
        ("Webs/Other", "the results folder of another recipe (Webs/Other)"),
        ("mine/../webs/other", "the results folder of another recipe (webs/other)"),
    ],
)
def test_parse_refuses_an_output_dir_that_is_not_the_recipes_own(output_dir, why):
    issue = _only_issue(_recipe(output_dir))
    assert (issue.path, issue.line, issue.field) == ("x.md", 2, "output_dir")
    assert issue.message.startswith("expected a folder of this recipe's own (webs/x/...")
    assert f"got {output_dir!r}: {why}" in issue.message
    assert str(issue).startswith("x.md:2 output_dir: expected ")


@pytest.mark.parametrize(
    ("output_dir", "normal"),
    [
        ("webs/x/results", "webs/x/results"),
        ("webs/x", "webs/x"),
        ("WEBS/x/out", "WEBS/x/out"),
        ("x/results", "x/results"),
        ("halilagin-medium/results", "halilagin-medium/results"),
    ],
)
def test_parse_accepts_the_recipes_own_folders(output_dir, normal):
    assert parse_recipe(_recipe(output_dir), path=WEB).output_dir == normal


@pytest.mark.parametrize(
    ("output_dir", "says"),
    [
        (".", "the results root itself"),
        ("tasks", "the tasks folder"),
        ("tasks/other/r", "another recipe (tasks/other)"),
    ],
)
def test_resolve_refuses_the_root_and_other_recipes_folders(tmp_path, output_dir, says):
    with pytest.raises(RecipeError) as caught:
        resolve_output_dir(_spec(output_dir), tmp_path)
    (issue,) = caught.value.issues
    assert (issue.path, issue.field) == ("x.md", "output_dir")
    assert issue.message.startswith("expected a folder of this recipe's own (tasks/x/...")
    assert f"got {output_dir!r}" in issue.message and says in issue.message


def test_resolve_refuses_a_symlink_into_another_recipes_folder(tmp_path):
    (tmp_path / "tasks" / "other").mkdir(parents=True)
    (tmp_path / "sneaky").symlink_to(tmp_path / "tasks" / "other", target_is_directory=True)
    with pytest.raises(RecipeError, match=r"leads through a symbolic link to the results folder of another recipe"):
        resolve_output_dir(_spec("sneaky/results"), tmp_path)


def test_resolve_accepts_the_recipes_own_folder(tmp_path):
    assert resolve_output_dir(_spec("tasks/x/out"), tmp_path) == tmp_path.resolve() / "tasks" / "x" / "out"
    assert resolve_output_dir(_spec(""), tmp_path) == tmp_path.resolve() / "tasks" / "x" / "results"


@pytest.mark.parametrize("path", sorted(DEMO.glob("*/*.md")), ids=lambda p: p.name)
def test_the_demo_recipes_still_parse_and_resolve(tmp_path, path):
    spec = load_recipe(path)
    out = resolve_output_dir(spec, tmp_path)
    assert out.is_relative_to(tmp_path.resolve()) and out != tmp_path.resolve()


# --- the size cap --------------------------------------------------------------------------


def _big(size: int) -> str:
    head = _recipe("webs/x/results")
    return head + "a" * (size - len(head.encode()))


def test_parse_refuses_a_recipe_over_the_cap_before_reading_yaml(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("YAML was parsed")

    monkeypatch.setattr(yaml, "SafeLoader", boom)
    issue = _only_issue(_big(MAX_RECIPE_BYTES + 1))
    assert (issue.path, issue.line, issue.field) == ("x.md", None, "file")
    assert f"at most {MAX_RECIPE_BYTES:,} bytes (256 KB)" in issue.message
    assert f"got {MAX_RECIPE_BYTES + 1:,} bytes" in issue.message


def test_the_cap_counts_utf8_bytes_not_characters():
    text = _recipe("webs/x/results") + "\U0001f600" * (MAX_RECIPE_BYTES // 4)  # a quarter of the characters
    assert len(text) < MAX_RECIPE_BYTES
    assert "got " in _only_issue(text).message


def test_a_recipe_at_the_cap_is_read():
    assert parse_recipe(_big(MAX_RECIPE_BYTES), path=WEB).output_dir == "webs/x/results"


def test_load_refuses_a_big_file_and_keeps_reading_small_ones(tmp_path):
    big = tmp_path / "big.md"
    big.write_text(_big(MAX_RECIPE_BYTES + 10))
    with pytest.raises(RecipeError) as caught:
        load_recipe(big, kind="web")
    assert str(caught.value).startswith(f"big.md file: expected a recipe of at most {MAX_RECIPE_BYTES:,} bytes")
    assert f"got {MAX_RECIPE_BYTES + 10:,} bytes" in str(caught.value)
    small = tmp_path / "small.md"
    small.write_bytes(b"---\r\nrecord: maybe\r\n---\r\nGo.\r\n")  # Windows line ends read as before
    with pytest.raises(RecipeError, match=r"small.md:2 record: expected true or false, got 'maybe'"):
        load_recipe(small, kind="web")


# --- rendered markdown ---------------------------------------------------------------------


def test_markdown_over_the_cap_is_cut_and_says_so():
    text = "line of text\n\n" * (MAX_MARKDOWN_CHARS // 10)
    html = str(render_markdown(text))
    assert f"Cut: the text is {len(text):,} characters long" in html
    assert html.count("<p>line of text</p>") <= MAX_MARKDOWN_CHARS // 14 + 1
    assert 'class="markdown-cut"' in html


def test_markdown_under_the_cap_is_whole():
    html = str(render_markdown("# Hi\n\n" + "a" * 1000))
    assert "Cut:" not in html and html.startswith("<h1>Hi</h1>")


def test_a_cut_without_line_ends_still_renders_the_first_part():
    html = str(render_markdown("<b>" * 10 + "x" * (MAX_MARKDOWN_CHARS * 2), limit=100))
    assert "&lt;b&gt;" in html and "Cut: the text is" in html and "<b>" not in html
