"""The notebooks' Predict cells: built by tools/nb_predict.py, answered by the core."""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import math
import numbers
import sys
from pathlib import Path

import pytest

from dlperf_widgets.core.predict import score_prediction

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("nb_predict", ROOT / "tools" / "nb_predict.py")
nb_predict = importlib.util.module_from_spec(_spec)
sys.modules["nb_predict"] = nb_predict  # dataclasses look their module up there
_spec.loader.exec_module(nb_predict)

CORE_NOTEBOOKS = [f"{i:02d}" for i in range(10)]


def _notebook(prefix: str) -> dict:
    (path,) = sorted((ROOT / "notebooks").glob(f"{prefix}_*.ipynb"))
    return json.loads(path.read_text())


def _predict_calls(source: str) -> list[ast.Call]:
    if "Predict(" not in source:
        return []
    return [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "Predict"
    ]


@pytest.mark.parametrize("prefix", CORE_NOTEBOOKS)
def test_every_core_notebook_asks_for_a_prediction(prefix):
    """Notebooks 00-09 each hold at least one Predict cell and a scoreboard before the summary."""
    cells = _notebook(prefix)["cells"]
    calls = [c for c in cells if c["cell_type"] == "code" and _predict_calls("".join(c["source"]))]
    assert calls, f"notebook {prefix} has no Predict cell"
    ids = [c.get("id") for c in cells]
    board = ids.index(f"pq-{prefix}-board")
    assert "".join(cells[board + 1]["source"]).startswith("## Summary")


@pytest.mark.parametrize("prefix", nb_predict.prefixes())
def test_predict_answers_are_functions_not_numbers(prefix):
    """Every Predict cell passes a lambda that calls something, never a literal answer."""
    for cell in _notebook(prefix)["cells"]:
        if cell["cell_type"] != "code":
            continue
        for call in _predict_calls("".join(cell["source"])):
            answer = next(k.value for k in call.keywords if k.arg == "answer")
            assert isinstance(answer, ast.Lambda), f"{cell['id']}: answer is not a lambda"
            assert any(isinstance(n, ast.Call) for n in ast.walk(answer.body)), (
                f"{cell['id']}: the lambda returns a constant"
            )


@pytest.mark.parametrize("moment", nb_predict.MOMENTS, ids=lambda m: m.cell_id)
def test_each_answer_comes_from_the_core(moment):
    """Each table entry builds in a fresh scope and yields a finite number or one of its choices,
    which the scorer accepts (a wrong choice list or a renamed core field fails here)."""
    answer = moment.build()()
    if moment.choices is None:
        assert isinstance(answer, numbers.Real) and not isinstance(answer, bool), answer
        assert math.isfinite(float(answer))
        assert score_prediction(answer, answer, tolerance=moment.tolerance).correct
    else:
        assert str(answer) in moment.choices, (answer, moment.choices)
        assert score_prediction(answer, answer, choices=moment.choices).correct


def test_cell_ids_are_unique_and_valid():
    """Inserted ids are unique, follow nbformat's id rule, and belong to their notebook."""
    ids = [m.cell_id for m in nb_predict.MOMENTS]
    assert len(ids) == len(set(ids))
    for m in nb_predict.MOMENTS:
        assert m.cell_id.startswith(f"pq-{m.notebook}-") and len(m.cell_id) <= 64


@pytest.mark.parametrize("prefix", nb_predict.prefixes())
def test_committed_notebooks_match_the_script(prefix):
    """The committed notebook is what the script makes of it: Predict cells in place and the
    reveal cells' outputs collapsed in JupyterLab (metadata.jupyter.outputs_hidden)."""
    nb = _notebook(prefix)
    cells = {c.get("id"): c for c in nb["cells"]}
    for m in (m for m in nb_predict.MOMENTS if m.notebook == prefix):
        if m.anchor not in cells:
            continue  # the script skips (and reports) a deleted anchor
        assert "".join(cells[m.cell_id]["source"]) == m.source()
        for rid in m.reveal:
            assert cells[rid]["metadata"]["jupyter"]["outputs_hidden"] is True, rid
    assert nb_predict.dumps(nb_predict.apply(nb, prefix)) == nb_predict.dumps(nb)


def test_script_is_idempotent_and_leaves_other_cells_alone():
    """Running twice changes nothing, and other cells keep their source and outputs."""
    nb = _notebook("01")
    once = nb_predict.apply(copy.deepcopy(nb), "01")
    twice = nb_predict.apply(copy.deepcopy(once), "01")
    assert nb_predict.dumps(once) == nb_predict.dumps(twice)
    before = {c["id"]: c for c in nb["cells"] if not c["id"].startswith("pq-")}
    after = {c["id"]: c for c in twice["cells"] if not c["id"].startswith("pq-")}
    assert before.keys() == after.keys()
    for cid, cell in before.items():
        assert after[cid]["source"] == cell["source"]
        assert after[cid].get("outputs") == cell.get("outputs")


def test_missing_anchor_is_reported_and_skipped():
    """A deleted anchor cell gives a warning and no Predict cell, not a failure."""
    nb = _notebook("00")
    moment = next(m for m in nb_predict.MOMENTS if m.notebook == "00")
    nb["cells"] = [c for c in nb["cells"] if c.get("id") not in (moment.anchor, moment.cell_id)]
    warnings: list[str] = []
    out = nb_predict.apply(nb, "00", warn=warnings.append)
    assert any(moment.anchor in w for w in warnings)
    assert moment.cell_id not in [c.get("id") for c in out["cells"]]


def test_rerun_keeps_the_outputs_of_an_executed_predict_cell():
    """On a notebook executed after the script ran, a second run keeps the Predict cells'
    outputs (the folded answer a kernel-less viewer shows) and replaces a changed cell."""
    nb = nb_predict.apply(_notebook("03"), "03")
    moment = next(m for m in nb_predict.MOMENTS if m.notebook == "03")
    cell = next(c for c in nb["cells"] if c["id"] == moment.cell_id)
    cell["outputs"] = [
        {"output_type": "display_data", "data": {"text/plain": ["x"]}, "metadata": {}}
    ]
    cell["execution_count"] = 7
    again = nb_predict.apply(copy.deepcopy(nb), "03")
    assert nb_predict.dumps(again) == nb_predict.dumps(nb)
    cell["source"] = ["dw.Predict('stale', answer=lambda: 1)"]
    fixed = next(c for c in nb_predict.apply(nb, "03")["cells"] if c["id"] == moment.cell_id)
    assert "".join(fixed["source"]) == moment.source() and fixed["outputs"] == []
