"""The house keeps rooms that fit in a head (issue 24): the engine is a loop of small parts."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 250


def class_sizes(path: Path) -> dict[str, int]:
    """Lines each class of a module spans, decorators and docstring included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return {
        node.name: node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


def test_it_measures_a_class_from_its_decorator_to_its_last_line(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "@dataclass\nclass A:\n    x: int\n\n    def f(self):\n        return 1\n\n\nclass B:\n    pass\n"
    )
    assert class_sizes(module) == {"A": 6, "B": 2}


def test_it_keeps_every_class_of_the_engine_under_250_lines():
    paths = sorted((ROOT / "runs").glob("engine*.py")) + sorted((ROOT / "runs").glob("engine*/**/*.py"))
    assert paths
    too_big = {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in paths
        for name, lines in class_sizes(path).items()
        if lines > MAX_CLASS_LINES
    }
    assert too_big == {}
