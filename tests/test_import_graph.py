"""The import graph goes one way (DESIGN.md): no circle between the project's modules (an import
inside a function counts: it runs too, only later), the apps in layers (no two apps importing
each other, no circle of apps), no import inside a function without a comment saying why, and
budgets/ stays pure Python."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "accounts",
    "agents",
    "api",
    "audit",
    "budgets",
    "catalogue",
    "cli",
    "demo_site",
    "evals",
    "notify",
    "ops",
    "policies",
    "reviews",
    "runs",
    "rysh_site",
    "schedules",
    "spend",
    "toolservers",
    "workspaces",
)
# The apps from the bottom up (docs: Layout). An app's domain modules import only the apps
# below it; the edges (pages, URLs, sockets, the CLI, the admin) sit on top of them all and may
# import any app, and nothing but another edge imports an edge. rysh_site is the project: its
# helpers (paths, roles, filters, …) are the bottom, its settings, URLs and ASGI entry the top.
LAYERS = (
    "rysh_site",
    "audit",
    "accounts",
    "budgets",
    "agents",
    "spend",
    "catalogue",
    "toolservers",
    "reviews",
    "policies",  # a team's policy file: read at the catalogue's sync, obeyed by every run
    "workspaces",
    "runs",
    "schedules",
    "evals",  # a recipe's tests: above runs (its cases are runs), below notify (which hears it)
    "notify",
    "ops",  # operating it: probes, metrics, traces, retention read every app below
    "demo_site",
    "api",  # the front door: its tokens sit on every app; its endpoints are edges (views)
    "cli",  # the `auto` command: an edge on top of everything, which nothing else imports
)
EDGE_PARTS = {"views", "urls", "consumers", "routing", "management", "admin", "cli", "asgi", "wsgi"}


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
    """Edges of every import that runs: at module level and inside functions (an import put
    in a function to dodge a circle is still a circle). Only a type named for a checker
    (`if TYPE_CHECKING:`) is left out: it never runs."""
    edges = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = set()
        for node in ast.walk(_without_type_checking(tree)):
            targets |= imported(node, known)
        edges[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return edges


def _without_type_checking(tree: ast.Module) -> ast.Module:
    tree.body = [n for n in tree.body if not (isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")]
    return tree


def is_edge(module: str) -> bool:
    """A page, URL map, socket, CLI verb or admin: the top of every app."""
    parts = module.split(".")
    return (
        parts[0] == "cli"
        or bool(EDGE_PARTS & set(parts[1:]))
        or parts[:2] in (["rysh_site", "settings"], ["rysh_site", "urls"])
        or (parts[0] == "rysh_site" and len(parts) > 1 and parts[1].startswith("settings"))
    )


def app_edges(edges: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(app, app it imports) -> the imports that make it, between domain modules of two apps."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, targets in edges.items():
        if is_edge(name):
            continue
        for target in targets:
            pair = (name.split(".")[0], target.split(".")[0])
            if pair[0] != pair[1]:
                found.setdefault(pair, []).append(f"{name} -> {target}")
    return found


def layer_breaks(edges: dict[str, set[str]]) -> list[str]:
    """Imports that go up the layers (or into an edge from below): every one a break."""
    rank = {app: i for i, app in enumerate(LAYERS)}
    breaks = [
        f"{a} imports {b}, which sits above it: {', '.join(sorted(why))}"
        for (a, b), why in sorted(app_edges(edges).items())
        if rank[a] < rank[b]
    ]
    breaks += [
        f"{name} imports the edge {target}"
        for name, targets in sorted(edges.items())
        if not is_edge(name)
        for target in sorted(targets)
        if is_edge(target)
    ]
    return breaks


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


def test_it_finds_a_circle_through_an_import_inside_a_function(tmp_path):
    """The circle runs.services -> spend.outlook -> schedules.services -> runs.services hid in
    a function's import; the graph sees imports in functions now."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    import a  # late\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n")
    edges = graph({name: tmp_path / f"{name}.py" for name in ("a", "b", "c")})
    assert edges == {"a": {"b"}, "b": {"a"}, "c": set()}
    assert circles(edges) == [["a", "b"]]


def test_it_finds_apps_importing_each_other_and_imports_going_up():
    edges = {"spend.quotas": {"runs.models"}, "runs.engine": {"spend.quotas"}, "spend.views": {"runs.live"}}
    assert layer_breaks(edges) == ["spend imports runs, which sits above it: spend.quotas -> runs.models"]
    assert layer_breaks({"runs.services": {"runs.views"}, "audit.views": {"runs.views"}}) == [
        "runs.services imports the edge runs.views"
    ]


def test_every_app_has_its_layer():
    assert sorted(LAYERS) == sorted(PACKAGES)


def test_the_apps_import_one_way_down_the_layers():
    assert layer_breaks(graph(modules())) == []


def test_nothing_but_the_cli_imports_the_cli():
    """The API and the pages share services and selectors with the command line, never its verbs."""
    edges = graph(modules())
    assert [
        f"{name} -> {target}"
        for name, targets in sorted(edges.items())
        if not name.startswith("cli")
        for target in sorted(targets)
        if target == "cli" or target.startswith("cli.")
    ] == []


def test_it_takes_the_cli_for_an_edge_on_top():
    assert is_edge("cli.runs") and is_edge("cli.management.commands.auto")
    assert layer_breaks({"runs.services": {"cli.runs"}}) == [
        "runs imports cli, which sits above it: runs.services -> cli.runs",
        "runs.services imports the edge cli.runs",
    ]


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
