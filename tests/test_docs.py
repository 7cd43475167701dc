"""The README is a front door and the manual a MkDocs site (mkdocs.yml, docs/): the site builds
with --strict (every link and anchor resolves, no page is left out of the nav), the README stays
short, its links lead somewhere, and its five-minute tour is the manual's tour page."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rysh_site import __version__
from tests.test_import_graph import LAYERS, PACKAGES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def nav_pages(entries) -> list[str]:
    """Every page file named in mkdocs.yml's nav, at any depth."""
    pages = []
    for entry in entries:
        if isinstance(entry, str):
            pages.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_the_manual_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        message = "mkdocs and mkdocs-material are not installed (requirements.txt pins them)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must build the manual")
        pytest.skip(f"{message}; the manual's strict build needs them (not skipped under CI=true)")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "screenshots" / "dashboard-live.png").is_file()


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs"
    in_nav = nav_pages(config["nav"])
    pages = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    assert sorted(in_nav) == pages
    assert len(set(in_nav)) == len(in_nav), "a page is in the nav twice"


def test_the_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines; the manual (docs/) is the place for more"


def test_the_readme_links_lead_somewhere():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue
        path = target.split("#", 1)[0]
        assert (ROOT / path).exists(), f"README.md links to {target}, which does not exist"


def test_the_readme_tour_is_the_manuals_tour_page():
    """The tour is in both places (GitHub shows the README, `make docs` the site): the same text,
    the README's links one folder up."""
    readme = README.read_text()
    [tour] = re.findall(r"^## A five-minute tour\n\n(.*?)(?=^## )", readme, re.S | re.M)
    page = (DOCS / "tour.md").read_text()
    title, body = page.split("\n\n", 1)
    assert title == "# A five-minute tour"
    assert tour.strip() == body.strip().replace("](", "](docs/")


# -- the manual and the code speak of the product ------------------------------------------------------

CITATION = re.compile(r"SPEC ?§|SPEC\.md|\bissue #?\d+", re.IGNORECASE)
CITED_FILES = (".py", ".md", ".html")
NOT_THE_PROJECT = {"site", "__pycache__", "node_modules"}  # the built manual; and dot-folders (.venv, .data)
NOT_CHECKED = {"CHANGELOG.md"}  # the product's history may name what a release fixed
# product content that names an issue: what a test's recipe asks, what a test's tool server answers
PRODUCT_TEXT = {
    ("tests/toolservers/test_recipes.py", "Read issue" + " 7 and write report.md."),  # apart: not a citation here
    ("tests/toolservers/servers.py", "Issue" + " #7: printer on fire."),
}


def citations(root: Path) -> list[str]:
    """Every line of a .py, .md or .html file under `root` that cites a planning document or an
    issue number ("file:line: text"), but NOT_CHECKED and the known product text."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in NOT_THE_PROJECT)
        for name in sorted(files):
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if not name.endswith(CITED_FILES) or relative in NOT_CHECKED:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if CITATION.search(line) and not any(
                    relative == where and text in line for where, text in PRODUCT_TEXT
                ):
                    found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_it_finds_a_citation_wherever_it_hides(tmp_path):
    spec, issue = "SPEC", "issue"  # written apart: this file cites nothing itself
    (tmp_path / "a.py").write_text(f"x = 1  # as {spec} §4 says\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text(f"Fine.\nSee {spec}.md.\nFixed in {issue.title()} #12.\n")
    (tmp_path / "c.html").write_text(f"<p>closes {issue} 3</p>\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "d.html").write_text(f"{issue} 5\n")  # the built manual: not ours to read
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "e.py").write_text(f"# {issue} 6\n")
    (tmp_path / "CHANGELOG.md").write_text(f"{issue} 7\n")
    (tmp_path / "f.txt").write_text(f"{issue} 8\n")
    (tmp_path / "g.py").write_text(f"t{issue} 9; an {issue} with numbers\n")
    assert citations(tmp_path) == [
        f"a.py:1: x = 1  # as {spec} §4 says",
        f"c.html:1: <p>closes {issue} 3</p>",
        f"docs/b.md:2: See {spec}.md.",
        f"docs/b.md:3: Fixed in {issue.title()} #12.",
    ]


def test_the_code_and_the_manual_cite_no_planning_document_nor_issue():
    """The manual (docs/) is the product's contract: code, tests, templates and pages cite its
    pages, never a planning document or an issue number."""
    assert citations(ROOT) == []


def test_the_changelog_opens_with_the_current_version_and_its_links_lead_somewhere():
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## (\S+)", text, re.M)
    assert releases[0] == __version__, f"CHANGELOG.md's newest section is {releases[0]}, the version {__version__}"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        assert (ROOT / target.split("#", 1)[0]).exists(), f"CHANGELOG.md links to {target}, which does not exist"
    assert "docs/upgrade-notifications.md" in text and "docs/upgrade-security.md" in text


def test_the_code_map_draws_the_layers_the_import_graph_enforces():
    """docs/layout.md's diagram, read top down, is tests/test_import_graph.py's LAYERS upside down;
    every app has its paragraph in the code map."""
    text = (DOCS / "layout.md").read_text()
    [diagram] = re.findall(r"^## Layers\n.*?^```\n(.*?)^```", text, re.S | re.M)
    below_the_edges = diagram.split("───", 1)[1].split("\n", 1)[1]
    drawn = [line.split()[0] for line in below_the_edges.splitlines() if re.match(r" \S", line)]
    assert drawn[::-1] == list(LAYERS)
    [code_map] = re.findall(r"^## The code\n.*?^```\n(.*?)^```", text, re.S | re.M)
    mapped = set(re.findall(r"^(\w+)/", code_map, re.M))
    assert set(PACKAGES) - mapped == set(), "apps with no paragraph in the code map"
