"""Guards what a reader sees on the web: committed notebooks ran cleanly, top to bottom, here-free."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALL = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb"))
ABSOLUTE = re.compile(r"(/work/|/root/|/home/[a-z]|/Users/[A-Za-z]|[A-Z]:\\\\Users)")


def _nb(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_no_error_outputs(path):
    """No cell of a committed notebook shows an error or a traceback."""
    for cell in _nb(path)["cells"]:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{path.name}: error output"
            text = "".join(out.get("text", "")) if out.get("output_type") == "stream" else ""
            assert "Traceback (most recent call last)" not in text, f"{path.name}: traceback"


@pytest.mark.parametrize("path", [p for p in ALL if "student" not in p.name], ids=lambda p: p.name)
def test_execution_counts_are_fresh(path):
    """Code cells were run once, in order, from a fresh kernel: counts are 1, 2, 3 ..."""
    counts = [c.get("execution_count") for c in _nb(path)["cells"] if c["cell_type"] == "code"]
    ran = [c for c in counts if c is not None]
    assert ran == list(range(1, len(ran) + 1)), f"{path.name}: stale execution counts {counts}"
    assert len(ran) == len(counts), f"{path.name}: some code cells were never run"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_no_absolute_paths(path):
    """Nothing in a notebook reveals the machine it was run on."""
    match = ABSOLUTE.search(path.read_text())
    assert match is None, f"{path.name} contains {match.group(0)!r}"
