"""Make the student copies of the exercise notebooks: solutions out, placeholders in.

    python -m dlperf_widgets.exercises.release exercises exercises/student
    python -m dlperf_widgets.exercises.release exercises exercises/student --check

Applies, in nbgrader's order, what ``nbgrader generate_assignment`` does to a cell's content:
lock cells (LockCells), replace ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` regions by
the code stub, and solution cells without a region by the stub (ClearSolutions), clear
outputs (ClearOutput), drop ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` regions
(ClearHiddenTests). The code stub is ``# YOUR CODE HERE`` rather than nbgrader's default
(which adds ``raise NotImplementedError()``): each answer cell already sets its answer to
``...`` above the solution, so an untouched student notebook runs to the end and every check
reports "not answered yet". Configure nbgrader with the same stub (see
exercises/INSTRUCTORS.md) and both give the same cells. nbgrader's checksums and gradebook
are not reproduced; use nbgrader itself to autograde.

``--check`` writes nothing and exits 1 when the student copies in OUT_DIR are out of date.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..core._validate import describe

CODE_STUB = "# YOUR CODE HERE"
TEXT_STUB = "YOUR ANSWER HERE"
BEGIN_SOLUTION, END_SOLUTION = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"

__all__ = ["CODE_STUB", "TEXT_STUB", "main", "release_notebook", "release_tree", "student_text"]


class ReleaseError(ValueError):
    """A source notebook breaks the marker rules (unclosed or nested region, bad metadata)."""


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _nbgrader(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def _replace_regions(
    text: str, begin: str, end: str, stub: list[str] | None, where: str
) -> tuple[str, bool]:
    """Replace each begin..end region (marker lines included) by ``stub`` (None: drop it)."""
    out: list[str] = []
    inside = found = False
    for line in text.split("\n"):
        if begin in line:
            if inside:
                raise ReleaseError(f"{where}: nested '{begin}' regions")
            inside = found = True
            if stub is not None:
                indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
                out.extend(indent + s for s in stub)
        elif end in line:
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ReleaseError(f"{where}: '{begin}' without '{end}'")
    return "\n".join(out), found


def release_notebook(
    nb: dict[str, Any], code_stub: str = CODE_STUB, text_stub: str = TEXT_STUB, name: str = ""
) -> dict[str, Any]:
    """The student version of a notebook given as nbformat-4 JSON (a new dict)."""
    nb = copy.deepcopy(nb)
    for i, cell in enumerate(nb["cells"]):
        where = f"{name or 'notebook'} cell {i}"
        meta = _nbgrader(cell)
        solution, grade, locked = (bool(meta.get(k)) for k in ("solution", "grade", "locked"))
        # LockCells
        if solution:
            cell["metadata"]["deletable"] = False
        elif grade or locked:
            cell["metadata"]["deletable"] = False
            cell["metadata"]["editable"] = False
        # ClearSolutions
        stub = code_stub if cell["cell_type"] == "code" else text_stub
        text, replaced = _replace_regions(
            _source(cell), BEGIN_SOLUTION, END_SOLUTION, stub.split("\n"), where
        )
        if replaced and not solution:
            raise ReleaseError(f"{where}: a solution region in a cell not marked as a solution")
        if solution and not replaced:
            text = stub
        cell["source"] = text
        # ClearOutput
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            for key in ("collapsed", "scrolled"):
                cell["metadata"].pop(key, None)
        # ClearHiddenTests
        text, removed = _replace_regions(cell["source"], BEGIN_HIDDEN, END_HIDDEN, None, where)
        if removed and not grade:
            raise ReleaseError(f"{where}: hidden tests in a cell not marked as graded")
        cell["source"] = text
    nb.get("metadata", {}).pop("celltoolbar", None)
    nb.get("metadata", {}).pop("widgets", None)  # widget state belongs to the outputs
    return nb


def _dump(nb: dict[str, Any]) -> str:
    # nbformat's own layout: indent 1, sorted keys, a final newline.
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def student_text(path: Path, code_stub: str = CODE_STUB) -> str:
    """The file the release writes for the source notebook at ``path`` (its student copy)."""
    return _dump(release_notebook(json.loads(path.read_text()), code_stub, name=path.name))


def release_tree(
    src: Path, out: Path, code_stub: str = CODE_STUB, write: bool = True
) -> list[Path]:
    """Release every ``*.ipynb`` directly in ``src`` into ``out``; return the stale/new paths."""
    notebooks = sorted(src.glob("*.ipynb"))
    if not notebooks:
        raise ReleaseError(f"'SRC_DIR' must contain .ipynb notebooks (got {describe(str(src))})")
    changed = []
    for path in notebooks:
        target = out / path.name
        text = student_text(path, code_stub)
        if not target.exists() or target.read_text() != text:
            changed.append(target)
            if write:
                out.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dlperf_widgets.exercises.release",
        description="Write student copies of exercise notebooks (solutions replaced).",
    )
    parser.add_argument("src", type=Path, metavar="SRC_DIR", help="folder of source notebooks")
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="folder for student copies")
    parser.add_argument("--code-stub", default=CODE_STUB, help="text replacing code solutions")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if OUT_DIR is out of date"
    )
    args = parser.parse_args(argv)
    try:
        changed = release_tree(args.src, args.out, args.code_stub, write=not args.check)
    except (ReleaseError, OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"{'out of date' if args.check else 'wrote'}: {path}")
    if args.check and changed:
        return 1
    if not changed:
        print(f"up to date: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
