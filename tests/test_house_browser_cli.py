"""The house, second pass (issue 24): the browser (agents/browser*.py) and the `auto` command
(runs/management/commands/auto.py and the verbs it dispatches to, runs/cli/) are split along
their seams, so that no class in them runs over 250 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 250


def house_files() -> list[Path]:
    return sorted(
        [
            *ROOT.glob("agents/browser*.py"),
            ROOT / "runs/management/commands/auto.py",
            *(ROOT / "runs/cli").glob("*.py"),
        ]
    )


def long_classes(source: str, name: str, limit: int = MAX_CLASS_LINES) -> list[str]:
    tree = ast.parse(source, filename=name)
    return [
        f"{name}: class {node.name} spans {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > limit
    ]


def test_it_finds_a_long_class_when_there_is_one():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    source = f"class Long:\n{body}\n\n\nclass Short:\n    pass\n"
    assert long_classes(source, "probe.py") == [f"probe.py: class Long spans {MAX_CLASS_LINES + 1} lines"]


def test_it_looks_at_the_browser_and_the_auto_command():
    names = {str(path.relative_to(ROOT)) for path in house_files()}
    assert {"agents/browser.py", "runs/management/commands/auto.py"} <= names
    assert any(name.startswith("runs/cli/") for name in names)


def test_no_class_in_the_browser_or_the_auto_command_runs_over_250_lines():
    found = [line for path in house_files() for line in long_classes(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


def test_every_action_of_auto_has_its_verb():
    from runs.management.commands.auto import ACTIONS, VERBS  # the command loads Django's models

    assert sorted(VERBS) == sorted(ACTIONS)
