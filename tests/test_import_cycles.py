"""Guards the layering of the package: no module imports itself back through others.

Every ``import`` statement in the package counts, lazy imports inside functions included,
since a circle is a design problem even where laziness keeps it from failing at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dlperf_widgets

ROOT = Path(dlperf_widgets.__file__).parent
PACKAGE = "dlperf_widgets"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # "from pkg import sub" names the submodule when there is one
                targets = [
                    f"{stem}.{a.name}" if f"{stem}.{a.name}" in files else stem for a in node.names
                ]
            for t in targets:
                if t in files and t != name and not name.startswith(t + "."):
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    """No set of the package's modules imports each other in a circle."""
    assert _cycles(_graph()) == []


def test_the_detector_finds_a_circle() -> None:
    """The cycle finder reports a two-module circle (so the test above can fail)."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_layers_import_only_downwards():
    """The design's layers: core imports nothing above it; plots nothing but core; widgets
    not the entry points (commands, CLI, magics)."""
    above = {
        "core": ("live", "widgets", "plots", "commands", "magics", "cli", "exercises"),
        "plots": ("live", "widgets", "commands", "magics", "cli"),
        "widgets": ("commands", "magics", "cli"),
    }
    bad = {
        (m, t)
        for m, ts in _graph().items()
        for layer, forbidden in above.items()
        if m.startswith(f"{PACKAGE}.{layer}")
        for t in ts
        if any(t.startswith(f"{PACKAGE}.{u}") for u in forbidden)
    }
    assert bad == set()
