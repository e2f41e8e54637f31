"""Notebook cells that need an optional package say so on their first line: ``# needs: torch``.

Where every named package imports, the cell runs unchanged. Where one is missing (an install
without PyTorch, a small course image, an in-browser site) the cell is replaced by one printed
line saying what it needs and how to get it, so the notebook runs on instead of stopping at an
ImportError::

    # needs: torch
    import torch
    ...

    # needs: torch, transformers
    model, ids = gpt2(...)

A cell that uses what an earlier guarded cell made (its measurement, its model) carries the
same first line. The marker is an ordinary comment, so a kernel that has not imported
``dlperf_widgets`` runs the cell as written. ``import dlperf_widgets`` inside IPython (and
``%load_ext dlperf_widgets``) registers the check as an input transformer; it uses only
``shell.input_transformers_cleanup``, which IPython has had since 7.0 (Colab runs 7.34).

A cell magic must stay on a cell's first line, so in ``# needs: torch`` followed by
``%%dlperf_time ...`` the marker line is dropped before IPython reads the magic.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["guard_cell", "missing", "register", "skip_message"]

MARKER = re.compile(r"^\s*#\s*needs:\s*([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*$")

# How a learner gets each package (the kit itself is not on the package index).
_WHAT = {
    "torch": ("PyTorch", "torch"),
    "transformers": ("Hugging Face transformers", "transformers"),
}


def missing(names: list[str]) -> list[str]:
    """The names among ``names`` whose top-level package does not import here."""
    absent = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    return absent


def skip_message(absent: list[str]) -> str:
    """One line: what the skipped cell needs and how to install it."""
    labels = [_WHAT.get(n, (n, n))[0] for n in absent]
    packages = " ".join(_WHAT.get(n, (n, n))[1] for n in absent)
    return (
        f"[skipped] this cell needs {' and '.join(labels)}, not installed here: "
        f"pip install {packages} (python3 kit.py lab installs it); the notebook runs on"
    )


def guard_cell(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: a cell whose first line is ``# needs: a, b`` becomes one
    ``print`` of :func:`skip_message` when a package is missing, else stays as written."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return lines
    found = MARKER.match(lines[first])
    if not found:
        return lines
    names = [n.strip() for n in found.group(1).split(",")]
    absent = missing(names)
    if absent:
        return [f"print({skip_message(absent)!r})\n"]
    rest = lines[first + 1 :]
    if rest and rest[0].lstrip().startswith("%%"):
        return rest  # the cell magic must open the cell
    return lines


def register(shell: Any) -> None:
    """Add :func:`guard_cell` to an IPython shell once."""
    transforms = getattr(shell, "input_transformers_cleanup", None)
    if transforms is not None and guard_cell not in transforms:
        transforms.append(guard_cell)


def register_in_running_shell() -> None:
    """Register in the IPython shell running this code, if any; never imports IPython."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        register(shell)
