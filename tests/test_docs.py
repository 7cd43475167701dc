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
