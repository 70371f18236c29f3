"""No import cycles among the project's packages.

The graph is read from the source (AST), not from an interpreter's import order: an edge A -> B for
every `import B` / `from B import …` in module A, at module level *and* inside functions (a deferred
import still ties the two modules together; `service.queue.diagnosis_jobs` <-> `service.queue.webhook_jobs` and
`models.base` <-> `models.registry` were cycles of that kind). Imports under `if TYPE_CHECKING:` are
left out: they are annotations only and never run.

Above the modules, the parts (top-level packages, and service's sub-packages) form layers: a module
imports only its own part or a lower layer, the order README's architecture drawing shows.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("vsandx", "pipeline", "data", "models", "training", "diagnosis", "service", "cli")


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        for p in sorted((REPO / pkg).rglob("*.py")):
            parts = list(p.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    return mods


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imported(module: str, path: Path) -> set[str]:
    """Dotted names `module` imports (each `from X import y` gives X and X.y), TYPE_CHECKING excluded."""
    names: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, ast.Import):
                names.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parent = package[: len(package) - child.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                names.add(base)
                names.update(f"{base}.{a.name}" for a in child.names)
            walk(child)

    walk(ast.parse(path.read_text(), str(path)))
    return names


def import_graph() -> dict[str, set[str]]:
    mods = _modules()

    def ours(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        graph[m] = {t for n in _imported(m, p) if (t := ours(n)) is not None and t != m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_checker_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_deferred_imports_and_not_type_checking_ones(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from service.app import Queue\n"
        "def f():\n    from service.queue.diagnosis_jobs import execute\n"
    )
    got = _imported("service.x", src)
    assert "service.queue.diagnosis_jobs" in got and "service.app" not in got


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert "service.queue.diagnosis_jobs" in graph and "models.registry" in graph["models.base"]  # the graph is read
    assert cycles(graph) == []


# Lowest first; a part imports only itself and parts of lower layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("vsandx",),
    ("pipeline", "data"),
    ("models",),
    ("training",),
    ("diagnosis",),
    ("service", "service.schemas"),  # `service` itself: the package, a docstring
    ("service.store", "service.trackers"),
    ("service.queue",),
    ("service.api",),
    ("service.app",),
    ("cli",),
)


def part(module: str) -> str:
    """The part a module belongs to: its top-level package, or service's sub-package or module."""
    names = module.split(".")
    return ".".join(names[:2]) if names[0] == "service" and len(names) > 1 else names[0]


def test_imports_point_down_the_layers() -> None:
    rank = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    graph = import_graph()
    assert {part(m) for m in graph} == set(rank)  # every part has a layer, and every layer a module
    upward = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if part(t) != part(m) and rank[part(t)] >= rank[part(m)]
    )
    assert upward == []
