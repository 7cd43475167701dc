"""The house keeps rooms that fit in a head (docs/layout.md): no class over 250 lines in the engine
(runs/engine/*.py, a loop of small collaborators), the browser (agents/browser/*.py, split along
its seams) or the `auto` command (cli/management/commands/auto.py and the verbs it dispatches
to, cli/)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 250


def house_files() -> list[Path]:
    return sorted(
        [
            *ROOT.glob("runs/engine/*.py"),
            *ROOT.glob("agents/browser/*.py"),
            ROOT / "cli/management/commands/auto.py",
            *(ROOT / "cli").glob("*.py"),
        ]
    )


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


def test_it_looks_at_the_engine_the_browser_and_the_auto_command():
    names = {str(path.relative_to(ROOT)) for path in house_files()}
    assert {"runs/engine/stages.py", "agents/browser/__init__.py", "cli/management/commands/auto.py"} <= names
    assert any(name.startswith("cli/") and name.count("/") == 1 for name in names)


def test_no_class_in_the_engine_the_browser_or_the_auto_command_runs_over_250_lines():
    too_big = {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in house_files()
        for name, lines in class_sizes(path).items()
        if lines > MAX_CLASS_LINES
    }
    assert too_big == {}


def test_every_action_of_auto_has_its_verb():
    from cli.management.commands.auto import ACTIONS, VERBS  # the command loads Django's models

    assert sorted(VERBS) == sorted(ACTIONS)
