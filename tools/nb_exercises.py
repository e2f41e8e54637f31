#!/usr/bin/env python3
"""Check the exercise notebooks: the nbgrader source notebooks are their own source.

    python tools/nb_exercises.py            # check every exercises/NN_*_exercises.ipynb
    python tools/nb_exercises.py FILE ...   # check the named source notebooks only

An instructor edits a source notebook in JupyterLab and saves; then runs the release command
(``python -m dlperf_widgets.exercises.release exercises exercises/student``), ``python
tools/nb_colab.py`` when a title or a link changed, and this check. Nothing here writes a
notebook. It reports, one line each, every problem it finds:

- nbgrader metadata: every marked cell has ``grade``, ``solution`` and ``locked`` as booleans,
  ``schema_version`` 3 and a ``grade_id`` unique within the notebook; a graded cell has
  positive ``points``; a graded code cell that is not a solution (a check cell) is locked and
  keeps its assertion between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``; a code
  solution holds ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` below a line setting the
  answer to ``...`` (an untouched student copy then runs to the end); an open question (a
  graded markdown solution) holds a model answer;
- setup: a locked cell imports ``check`` before the first task;
- self-checks: every answer cell is followed by a check cell, every check cell names a task
  that ``dlperf_widgets.exercises`` defines, and every task of the notebook's number is
  checked somewhere in it;
- the Colab badge and install cell that ``tools/nb_colab.py`` maintains are in place;
- the student copy in ``exercises/student/`` is exactly what the release command writes.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
STUDENT = EXERCISES / "student"

NBGRADER_KEYS = ("grade", "solution", "locked")
_ANSWER_LINE = re.compile(r"^\s*[A-Za-z_]\w*\s*=\s*\.\.\.\s*(#.*)?$", re.M)


def _text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _nbgrader(cell: dict[str, Any]) -> dict[str, Any]:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def check_calls(source: str) -> list[str]:
    """The task ids of the ``check("NN.name", ...)`` calls in a code cell's source."""
    if "check(" not in source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "check"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def _metadata_problems(cells: list[dict[str, Any]], where: str) -> list[str]:
    problems = []
    seen: dict[str, int] = {}
    for i, cell in enumerate(cells):
        if "nbgrader" not in cell.get("metadata", {}):
            continue
        at = f"{where} cell {i} ({cell.get('id', '?')})"
        meta = _nbgrader(cell)
        if not meta:
            problems.append(f"{at}: its nbgrader metadata must be a mapping")
            continue
        bad = [k for k in NBGRADER_KEYS if not isinstance(meta.get(k), bool)]
        if bad:
            problems.append(f"{at}: nbgrader '{bad[0]}' must be true or false")
            continue
        if meta.get("schema_version") != 3:
            problems.append(f"{at}: nbgrader 'schema_version' must be 3")
        gid = meta.get("grade_id")
        if not isinstance(gid, str) or not re.fullmatch(r"[\w-]+", gid):
            problems.append(f"{at}: nbgrader 'grade_id' must be a name of letters, digits, _ or -")
        elif gid in seen:
            problems.append(f"{at}: grade_id {gid!r} is already used by cell {seen[gid]}")
        else:
            seen[gid] = i
        text = _text(cell)
        code = cell.get("cell_type") == "code"
        if meta["grade"]:
            points = meta.get("points")
            if isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0:
                problems.append(f"{at}: a graded cell must have positive nbgrader 'points'")
        if meta["grade"] and not meta["solution"]:
            if not meta["locked"]:
                problems.append(f"{at}: a check cell must be locked")
            if code and "BEGIN HIDDEN TESTS" not in text:
                problems.append(f"{at}: a check cell keeps its assertion in hidden tests")
        if meta["solution"] and code:
            if "### BEGIN SOLUTION" not in text or "### END SOLUTION" not in text:
                problems.append(f"{at}: an answer cell must hold its solution between markers")
            elif not _ANSWER_LINE.search(text.split("### BEGIN SOLUTION")[0]):
                problems.append(
                    f"{at}: an answer cell must set its answer to ... above the solution"
                )
        if meta["solution"] and not code:
            if not meta["grade"]:
                problems.append(f"{at}: an open question must be graded (manually)")
            if "Model answer" not in text:
                problems.append(f"{at}: an open question must hold a model answer")
        if meta["locked"] and meta["solution"]:
            problems.append(f"{at}: an answer cell must not be locked")
    return problems


def _task_problems(cells: list[dict[str, Any]], where: str, number: str) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from dlperf_widgets.exercises import tasks

    defined = {t.id for t in tasks(f"{number}.")} if number else set()
    problems = []
    checked: set[str] = set()
    waiting: int | None = None  # the answer cell still waiting for its check
    for i, cell in enumerate(cells):
        meta = _nbgrader(cell)
        if cell.get("cell_type") != "code":
            continue
        if meta.get("solution"):
            if waiting is not None:
                problems.append(f"{where} cell {waiting}: an answer cell without a check cell")
            waiting = i
        ids = check_calls(_text(cell)) if meta.get("grade") else []
        for task_id in ids:
            if number and task_id not in defined:
                problems.append(
                    f"{where} cell {i}: check names no task of exercise {number}: {task_id!r}"
                )
            checked.add(task_id)
        if ids:
            waiting = None
    if waiting is not None:
        problems.append(f"{where} cell {waiting}: an answer cell without a check cell")
    for task_id in sorted(defined - checked):
        problems.append(f"{where}: task {task_id!r} has no check cell")
    return problems


SETUP_LINE = "from dlperf_widgets.exercises import check"


def _setup_problems(cells: list[dict[str, Any]], where: str) -> list[str]:
    """The setup cell imports ``check`` before any task and is locked (read-only)."""
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "code" and SETUP_LINE in _text(cell):
            if not _nbgrader(cell).get("locked"):
                return [f"{where} cell {i}: the setup cell must be locked"]
            return []
        if _nbgrader(cell).get("solution"):
            break
    return [f"{where}: no setup cell runs {SETUP_LINE!r} before the first task"]


def _colab_problems(nb: dict[str, Any], name: str) -> list[str]:
    sys.path.insert(0, str(ROOT / "tools"))
    import nb_colab
    import nbformat

    def written(x: dict[str, Any]) -> str:
        return nbformat.writes(nbformat.from_dict(x))

    if written(nb_colab.transform(nb, name)) != written(nb):
        return [f"{name}: the Colab badge, install cell or student links are missing or stale "
                "(run python tools/nb_colab.py)"]  # fmt: skip
    return []


def _student_problems(paths: list[Path], student: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from dlperf_widgets.exercises.release import student_text

    problems = []
    for path in paths:
        copy = student / path.name
        if not copy.exists() or copy.read_text() != student_text(path):
            problems.append(
                f"{path.name}: the student copy is stale (run python -m "
                "dlperf_widgets.exercises.release exercises exercises/student)"
            )
    return problems


def lint(nb: dict[str, Any], name: str) -> list[str]:
    """The problems of one source notebook (given as nbformat-4 JSON), one sentence each."""
    cells = nb.get("cells", [])
    number = name[:2] if re.match(r"\d\d_", name) else ""
    return (
        _metadata_problems(cells, name)
        + _setup_problems(cells, name)
        + _task_problems(cells, name, number)
        + _colab_problems(nb, name)
    )


def lint_paths(paths: list[Path], student: Path = STUDENT) -> list[str]:
    """The problems of these source notebooks and of their student copies."""
    problems = []
    for path in paths:
        problems += lint(json.loads(path.read_text()), path.name)
    return problems + _student_problems(paths, student)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/nb_exercises.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("files", nargs="*", type=Path, help="source notebooks (default: all)")
    args = parser.parse_args(argv)
    paths = args.files or sorted(EXERCISES.glob("[0-9][0-9]_*_exercises.ipynb"))
    problems = lint_paths(paths)
    for line in problems:
        print(line)
    print(f"{len(paths)} exercise notebook(s) checked: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
