#!/usr/bin/env python3
"""Check the course notebooks' Predict cells: the notebooks are their own source.

    python tools/nb_predict.py              # lint every notebooks/NN_*.ipynb; exit 1 on a problem
    python tools/nb_predict.py FILE ...     # lint the named notebooks

An author writes a Predict moment in JupyterLab and saves; nothing here writes a notebook.
A Predict cell is a code cell calling ``dw.Predict(question, answer=lambda: ..., ...)``. The
lint asks of each one that it does not give its answer away before the learner has guessed:

- its ``answer`` is a lambda that calls the kit (never a literal), and it has no ``explain=``
  (the cell's source is visible in static viewers, so an explanation there would be read first);
- its source is collapsed in JupyterLab (``metadata.jupyter.source_hidden``; the widget shows
  the question), and ``metadata.dlperf.reveal`` lists the cells whose output gives the answer,
  each with its output collapsed (``metadata.jupyter.outputs_hidden``);
- the markdown cell right after its last reveal cell opens with the explanation folded in a
  ``<details>`` element, so the prose that discusses the answer stays closed until opened.

Across the notebook: cell ids are unique, and a ``dw.Predict.scoreboard()`` cell stands right
before the ``## Summary`` cell.
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
NOTEBOOKS = ROOT / "notebooks"

# The opening of a fold in markdown: <details> (optionally with attributes), as rendered by
# JupyterLab, nbconvert's HTML and GitHub's notebook viewer alike.
_FOLD = re.compile(r"<details[^>]*>.*?</details>", re.DOTALL | re.IGNORECASE)


def _text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def predict_calls(source: str) -> list[ast.Call]:
    """The ``*.Predict(...)`` calls in a code cell's source (none when it does not parse)."""
    if "Predict(" not in source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "Predict"
    ]


def is_predict_cell(cell: dict[str, Any]) -> bool:
    """A code cell that builds a Predict widget (the scoreboard cell is not one)."""
    return cell.get("cell_type") == "code" and bool(predict_calls(_text(cell)))


def visible_markdown(text: str) -> str:
    """Markdown with every ``<details>`` fold removed: what a reader sees before opening one."""
    return _FOLD.sub("", text)


def folds(text: str) -> list[str]:
    """The contents of the ``<details>`` folds of a markdown text."""
    return _FOLD.findall(text)


def explanation(cells: list[dict[str, Any]], index: int) -> tuple[int, str] | None:
    """(cell index, fold text) of the explanation of the Predict cell at ``index``: the first
    fold of the markdown cell right after its last reveal cell; None when there is none."""
    ids = [c.get("id") for c in cells]
    reveal = cells[index].get("metadata", {}).get("dlperf", {}).get("reveal", [])
    last = max([ids.index(r) for r in reveal if r in ids] or [index])
    if last + 1 >= len(cells) or cells[last + 1].get("cell_type") != "markdown":
        return None
    text = _text(cells[last + 1])
    if not text.lstrip().lower().startswith("<details"):
        return None
    return last + 1, folds(text)[0] if folds(text) else ""


def _lint_predict(cells: list[dict[str, Any]], i: int) -> list[str]:
    cell = cells[i]
    cid = cell.get("id", f"cell {i}")
    problems = []
    ids = [c.get("id") for c in cells]
    for call in predict_calls(_text(cell)):
        keywords = {k.arg: k.value for k in call.keywords}
        answer = keywords.get("answer", call.args[1] if len(call.args) > 1 else None)
        if not isinstance(answer, ast.Lambda) or not any(
            isinstance(n, ast.Call) for n in ast.walk(answer.body)
        ):
            problems.append(f"{cid}: 'answer' must be a lambda that calls the kit")
        if "explain" in keywords:
            problems.append(
                f"{cid}: 'explain=' shows the answer in the visible source; put the explanation "
                "in the <details> fold after the reveal cells"
            )
    meta = cell.get("metadata", {})
    if meta.get("jupyter", {}).get("source_hidden") is not True:
        problems.append(f"{cid}: the source must be collapsed (metadata.jupyter.source_hidden)")
    reveal = meta.get("dlperf", {}).get("reveal")
    if not isinstance(reveal, list):
        problems.append(f"{cid}: metadata.dlperf.reveal must list the cells that give the answer")
        reveal = []
    for rid in reveal:
        if rid not in ids:
            problems.append(f"{cid}: reveal cell {rid} is not in the notebook")
            continue
        rcell = cells[ids.index(rid)]
        if rcell.get("metadata", {}).get("jupyter", {}).get("outputs_hidden") is not True:
            problems.append(f"{cid}: reveal cell {rid} must have its output collapsed")
    if explanation(cells, i) is None:
        problems.append(
            f"{cid}: the markdown cell after the last reveal cell must open with the "
            "explanation folded in <details>"
        )
    return problems


def lint(nb: dict[str, Any], name: str = "notebook") -> list[str]:
    """Every problem of the notebook's Predict cells, one sentence each (empty when clean)."""
    cells = nb.get("cells", [])
    problems = []
    ids = [c.get("id") for c in cells]
    dupes = sorted({i for i in ids if ids.count(i) > 1 and i is not None})
    if dupes:
        problems.append(f"cell ids must be unique (repeated: {', '.join(dupes)})")
    predict = [i for i, c in enumerate(cells) if is_predict_cell(c)]
    for i in predict:
        problems.extend(_lint_predict(cells, i))
    if predict:
        summary = next((i for i, c in enumerate(cells) if _text(c).startswith("## Summary")), None)
        board = (
            summary is not None
            and summary > 0
            and "Predict.scoreboard()" in _text(cells[summary - 1])
        )
        if not board:
            problems.append("a dw.Predict.scoreboard() cell must stand right before '## Summary'")
    return [f"{name}: {p}" for p in problems]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all)")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    problems = []
    for path in paths:
        problems.extend(lint(json.loads(path.read_text()), path.name))
    for p in problems:
        print(p)
    print(f"{len(paths)} notebook(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
