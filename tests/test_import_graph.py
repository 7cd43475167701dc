"""The import graph goes one way (DESIGN.md): no circle between the project's modules, no
import inside a function without a comment saying why, and budgets/ stays pure Python."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "agents",
    "audit",
    "budgets",
    "catalogue",
    "demo_site",
    "notify",
    "reviews",
    "runs",
    "rysh_site",
    "schedules",
    "workspaces",
)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[dotted.removesuffix(".__init__")] = path
    return found


def imported(node: ast.AST, known: dict[str, Path]) -> set[str]:
    """The project modules an import statement names (`from a import b` may name module a.b)."""
    names = set()
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        names = {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in names if name in known}


def graph(known: dict[str, Path]) -> dict[str, set[str]]:
    """Edges of module-level imports (what runs when a module is imported)."""
    edges = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = set()
        for node in tree.body:
            for inner in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
                targets |= imported(inner, known)
        edges[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def imports_in_functions(path: Path) -> list[str]:
    """Imports inside a function with no reason given: a comment on the import, or on the line
    above the block of imports it belongs to (the formatter splits one import into several)."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines), filename=str(path))
    bare = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not _has_reason(lines, node.lineno - 1):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(bare))


def _has_reason(lines: list[str], index: int) -> bool:
    while True:
        if "#" in lines[index]:
            return True
        index -= 1
        if index < 0:
            return False
        above = lines[index].strip()
        if above.startswith("#"):
            return True
        if not above.startswith(("import ", "from ")):
            return False


def test_it_finds_a_circle_when_there_is_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_it_has_no_import_circle_between_modules():
    assert circles(graph(modules())) == []


def test_it_has_no_import_inside_a_function_without_a_reason():
    known = modules()
    assert [line for path in known.values() for line in imports_in_functions(path)] == []


def test_it_keeps_budgets_pure_python():
    """budgets/ is the pure core: no Django, no other app (a type named for a checker is fine)."""
    for path in sorted((ROOT / "budgets").rglob("*.py")):
        tree = ast.parse(path.read_text())
        tree.body = [
            node
            for node in tree.body
            if not (isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
        ]
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name.split(".")[0] not in {"django", *PACKAGES} - {"budgets"}, f"{path}: {name}"
