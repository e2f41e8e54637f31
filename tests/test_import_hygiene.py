"""Guards the layering: core imports only stdlib + numpy; the package imports with numpy alone."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import dlperf_widgets

CORE = Path(dlperf_widgets.__file__).parent / "core"
HEAVY = ("matplotlib", "ipywidgets", "IPython", "torch", "traitlets", "pandas", "scipy")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_core_imports_only_stdlib_and_numpy():
    """Every module of dlperf_widgets.core imports the standard library, numpy or itself."""
    allowed = set(sys.stdlib_module_names) | {"numpy", "__future__"}
    for path in CORE.rglob("*.py"):
        bad = _imports(path) - allowed
        assert not bad, f"{path.name} imports {sorted(bad)}"


BLOCKER = textwrap.dedent(
    f"""
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in {HEAVY!r}:
                raise ImportError('blocked: ' + name)
    sys.meta_path.insert(0, Block())
    """
)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_package_works_with_numpy_only():
    """With every optional dependency unimportable, the package, its core and the CLI work."""
    res = _run(
        """
        import dlperf_widgets as d
        r = d.gemm(8192, 128, 8192, gpu='V100')
        assert round(r.arithmetic_intensity, 1) == 124.1
        from dlperf_widgets.cli import main
        assert main(['gemm', '64', '64', '64', '--json']) == 0
        assert main(['gpu', 'A100']) == 0
        mods = [m for m in sys.modules if m.split('.')[0] in {heavy!r}]
        assert not mods, mods
        """.replace("{heavy!r}", repr(HEAVY))
    )
    assert res.returncode == 0, res.stderr


def test_core_import_loads_no_heavy_module():
    """Importing dlperf_widgets.core (without blocking anything) pulls in no UI or torch module."""
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, dlperf_widgets.core, dlperf_widgets;"
            f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}])",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


def test_optional_widget_names_say_what_to_install():
    """A widget name accessed without ipywidgets gives a MissingDependency naming the extra."""
    res = _run(
        """
        import dlperf_widgets
        try:
            dlperf_widgets.GemmExplorer
        except dlperf_widgets.MissingDependency as exc:
            assert "pip install ipywidgets matplotlib" in str(exc), str(exc)
            assert "dlperf_widgets[" not in str(exc), str(exc)
        else:
            raise SystemExit('no error')
        """
    )
    assert res.returncode == 0, res.stderr
