#!/usr/bin/env python3
"""Build and execute the course notebooks.

    python tools/nbtools.py execute notebooks/01_gemm_and_intensity.ipynb [...]
        run each notebook top to bottom in a fresh kernel (the project's environment), save it
        with its outputs, and print how long it took

Authoring helpers for scripts that write notebooks:

    from tools.nbtools import md, code, write
    write("notebooks/NN_topic.ipynb", [md("# Title", tags=["topic-T01"]), code("1 + 1")])

Tags: ``topic-TNN`` marks the markdown cell that opens the section teaching a curriculum topic
(see notebooks/curriculum.csv); ``nbval-check-output`` makes nbval compare a cell's output, so a
change in the core that alters a printed reference number fails the notebook test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def md(text: str, tags: list[str] | tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell = new_markdown_cell(text.strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def code(src: str, tags: list[str] | tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell = new_code_cell(src.strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def write(path: str | Path, cells: list[nbformat.NotebookNode]) -> Path:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path)
    nbformat.write(nb, path)
    return path


def execute(path: str | Path, timeout: int = 300) -> float:
    """Run a notebook in a fresh kernel from its own folder and save it with outputs."""
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # no stale counts or outputs survive a rebuild
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    # nbclient stores the widgets' state in the notebook metadata, so a viewer without a
    # kernel can still draw the standard ipywidgets controls.
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "execute":
        print(__doc__)
        return 2
    total = 0.0
    for name in argv[1:]:
        seconds = execute(name)
        total += seconds
        print(f"{name}: {seconds:.1f} s")
    print(f"total: {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
