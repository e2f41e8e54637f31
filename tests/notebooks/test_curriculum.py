"""Guards the curriculum map: every topic (T01-T36 from the guides, T37 onwards beyond them)
is taught in a notebook section that exists."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _rows() -> list[dict[str, str]]:
    lines = (NOTEBOOKS / "curriculum.csv").read_text().splitlines()
    return list(csv.DictReader(ln for ln in lines if ln and not ln.startswith("#")))


def _tags(notebook: str) -> set[str]:
    nb = nbformat.read(NOTEBOOKS / f"{notebook}.ipynb", as_version=4)
    return {t for c in nb.cells if c.cell_type == "markdown" for t in c.metadata.get("tags", [])}


def test_map_lists_every_topic_once_in_order():
    """The map has T01, T02, ... without gaps or repeats, at least up to T48."""
    ids = [r["id"] for r in _rows()]
    assert len(ids) >= 48
    assert ids == [f"T{i:02d}" for i in range(1, len(ids) + 1)]


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["id"])
def test_topic_has_a_section(row):
    """The notebook named for the topic exists and has a markdown cell tagged topic-TNN."""
    path = NOTEBOOKS / f"{row['notebook']}.ipynb"
    assert path.exists(), f"{row['id']}: {path.name} is missing"
    assert f"topic-{row['id']}" in _tags(row["notebook"]), f"{row['id']} has no section"
