"""The course runs on where PyTorch is not installed (a small install, a course image, an
in-browser site): every notebook that touches PyTorch or the live layer is executed in a kernel
where `import torch` and `import transformers` fail, and no cell may stop with an error; the
cells that need them print one line instead (`# needs: torch`, dlperf_widgets.cell_needs).

The kernel is this environment's Python; packages are blocked by putting stand-ins first on
its PYTHONPATH whose import raises ModuleNotFoundError, so no second environment is built.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest

nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("torch", "transformers")
USES_TORCH = re.compile(r"\btorch\b|\btransformers\b|dlperf_widgets\.live\b|%%?dlperf_time")
CELL_TIMEOUT_S = 300
MARKED = re.compile(r"\s*# needs: ")


def torch_notebooks() -> list[Path]:
    """Course notebooks and exercise sources with a code cell that touches torch or live/."""
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    paths += sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))
    found = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if any(c.cell_type == "code" and USES_TORCH.search(c.source) for c in nb.cells):
            found.append(path)
    return found


def write_blockers(folder: Path) -> Path:
    for name in BLOCKED:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (blocked for this test)'!r},"
            f" name={name!r})\n"
        )
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("path", torch_notebooks(), ids=lambda p: p.name)
def test_notebook_runs_without_torch(path, tmp_path, monkeypatch):
    """Every cell of the notebook runs without an error where torch and transformers are
    missing, and every skipped cell said so in one line."""
    blockers = write_blockers(tmp_path / "blocked")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(blockers), str(ROOT)]))
    monkeypatch.setenv("MPLBACKEND", "agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    # the kernel runs in a scratch folder: files a notebook writes stay out of the repository
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{path.name} stopped without PyTorch:\n{str(exc)[-3000:]}")
    marked = [c for c in nb.cells if c.cell_type == "code" and MARKED.match(c.source)]
    said = [
        line
        for cell in marked
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
        for line in out.get("text", "").splitlines()
    ]
    # each marked cell printed its one line (torch and transformers are the only packages
    # the markers name, and both are blocked here) and raised nothing. Counted per cell: a
    # progress line an earlier cell's thread flushes late can land in the next cell's
    # stream on a loaded machine, and is not the marked cell's doing.
    for cell in marked:
        lines = [
            line
            for out in cell.get("outputs", [])
            if out.get("output_type") == "stream"
            for line in out.get("text", "").splitlines()
        ]
        skips = [line for line in lines if line.startswith("[skipped] this cell needs")]
        assert len(skips) == 1, (cell.get("id"), lines)
        assert "pip install torch" in skips[0], skips
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", []))
    assert len(said) >= len(marked), said
