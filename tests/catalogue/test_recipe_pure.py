"""Recipe parsing is pure core (DESIGN.md): importing it loads no Django and no other app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("agents", "demo_site", "reviews", "runs", "rysh_site", "schedules")


def test_it_parses_recipes_without_loading_django_or_another_app():
    # A fresh interpreter: this one has Django loaded already by pytest-django.
    probe = (
        "import sys, catalogue.recipe, catalogue.spec; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {('django', *APPS)!r}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"
