"""safe_child: the one check between a name from outside (URL, tool call, database row) and
the disk. A table of the ways out, and hypothesis for "whatever it returns is below root"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rysh_site.paths import UnsafePath, safe_child


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A results folder with a file, a subfolder, a link that stays in and two that leave."""
    folder = tmp_path / "results"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "day1.md").write_text("in")
    (folder / "report.md").write_text("in")
    (tmp_path / "secret.txt").write_text("out")
    (folder / "inside-link.md").symlink_to(folder / "report.md")
    (folder / "outside-link.md").symlink_to(tmp_path / "secret.txt")
    (folder / "outside-dir").symlink_to(tmp_path)
    return folder


@pytest.mark.parametrize(
    "name, inside",
    [
        ("report.md", "report.md"),
        ("notes/day1.md", "notes/day1.md"),
        ("notes/../report.md", "report.md"),  # `..` that stays inside is judged by where it leads
        ("./report.md", "report.md"),
        ("not-yet-written.md", "not-yet-written.md"),  # save_result names files that do not exist yet
        ("inside-link.md", "report.md"),
        (Path("notes") / "day1.md", "notes/day1.md"),
    ],
)
def test_it_resolves_a_name_inside_the_folder(root, name, inside):
    assert safe_child(root, name) == (root / inside).resolve()


@pytest.mark.parametrize(
    "name, said",
    [
        ("../secret.txt", "is outside the folder"),
        ("notes/../../secret.txt", "is outside the folder"),
        ("outside-link.md", "is outside the folder"),
        ("outside-dir/secret.txt", "is outside the folder"),
        ("/etc/passwd", "is an absolute path"),
        (".", "is outside the folder"),  # the folder itself is no file inside it
        ("notes/..", "is outside the folder"),
        ("", "non-empty text"),
        ("   ", "non-empty text"),
        ("a\x00b", "NUL byte"),
        (None, "non-empty text"),
        (42, "non-empty text"),
    ],
)
def test_it_refuses_a_way_out_with_a_clear_message(root, name, said):
    with pytest.raises(UnsafePath, match=said):
        safe_child(root, name)


def test_it_refuses_an_absolute_name_even_when_it_points_inside(root):
    with pytest.raises(UnsafePath, match="absolute path"):
        safe_child(root, str(root / "report.md"))


def test_it_names_the_folder_in_its_message(root):
    with pytest.raises(UnsafePath, match="'../x' is outside the results folder"):
        safe_child(root, "../x", folder="the results folder")


def test_it_resolves_the_root_itself(root):
    """A root reached through a symlink still contains what is below it."""
    link = root.parent / "link-to-results"
    link.symlink_to(root)
    assert safe_child(link, "report.md") == (root / "report.md").resolve()


PARTS = st.sampled_from(
    ["..", ".", "notes", "report.md", "outside-link.md", "outside-dir", "inside-link.md", "x", "", "/", "secret.txt"]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(PARTS, min_size=1, max_size=6))
def test_it_returns_only_paths_strictly_below_the_real_root(root, parts):
    name = "/".join(parts)
    try:
        target = safe_child(root, name)
    except UnsafePath:
        return
    real_root = root.resolve()
    assert real_root in target.parents
    assert os.path.realpath(target) == str(target)  # no link left to follow somewhere else
