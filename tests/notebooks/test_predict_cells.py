"""The notebooks' Predict cells, read from the notebooks themselves (they are their own source).

``tools/nb_predict.py`` is the lint an author runs after saving a notebook; these tests run it on
every course notebook, check that it catches each way of giving an answer away, evaluate every
self-contained Predict cell's answer through the core, and render a notebook to static HTML the
way a kernel-less viewer does.
"""

from __future__ import annotations

import copy
import html.parser
import importlib.util
import json
import math
import numbers
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dlperf_widgets.core.predict import score_prediction

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("nb_predict", ROOT / "tools" / "nb_predict.py")
nb_predict = importlib.util.module_from_spec(_spec)
sys.modules["nb_predict"] = nb_predict
_spec.loader.exec_module(nb_predict)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CORE_NOTEBOOKS = [f"{i:02d}" for i in range(10)]


def _notebook(prefix: str) -> dict:
    (path,) = sorted((ROOT / "notebooks").glob(f"{prefix}_*.ipynb"))
    return json.loads(path.read_text())


def _text(cell: dict) -> str:
    return "".join(cell["source"])


def _predict_cells() -> list[Any]:
    out = []
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            if nb_predict.is_predict_cell(cell):
                out.append(pytest.param(path.name, cell, id=f"{path.name[:2]}-{cell['id']}"))
    return out


PREDICT_CELLS = _predict_cells()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_notebook_passes_the_predict_lint(path):
    """The committed notebook passes the lint an author runs after saving it in JupyterLab."""
    assert nb_predict.lint(json.loads(path.read_text()), path.name) == []


def test_the_course_asks_for_predictions():
    """The course keeps its predict-then-reveal moments (over a hundred Predict cells)."""
    assert len(PREDICT_CELLS) >= 100


@pytest.mark.parametrize("prefix", CORE_NOTEBOOKS)
def test_every_core_notebook_asks_for_a_prediction(prefix):
    """Notebooks 00-09 each hold at least one Predict cell."""
    assert any(nb_predict.is_predict_cell(c) for c in _notebook(prefix)["cells"])


def _sentences(text: str) -> list[str]:
    """The longer sentences of a text, whitespace normalised (short ones match by chance)."""
    flat = " ".join(text.replace("**In short:**", " ").split())
    parts = [s.strip() for s in flat.replace("! ", ". ").replace("? ", ". ").split(". ")]
    return [s for s in parts if len(s) >= 25 and not s.startswith("<")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_no_explanation_is_visible_before_the_guess(path):
    """No Predict cell's source, nor any visible (unfolded) markdown from the question before
    it down to the cell that holds its explanation, contains a sentence of that explanation:
    the explanation is read only after opening its fold."""
    cells = json.loads(path.read_text())["cells"]
    checked = 0
    for i, cell in enumerate(cells):
        if not nb_predict.is_predict_cell(cell):
            continue
        found = nb_predict.explanation(cells, i)
        assert found is not None, f"{cell['id']}: no folded explanation"
        where, fold = found
        sentences = _sentences(fold.split("</summary>", 1)[-1])
        assert sentences, f"{cell['id']}: the fold explains nothing"
        anchor = max(j for j in range(i) if cells[j]["cell_type"] == "markdown")
        shown = [_text(cell)] + [
            nb_predict.visible_markdown(_text(c))
            for c in cells[anchor : where + 1]
            if c["cell_type"] == "markdown"
        ]
        for sentence in sentences:
            leaks = [s for s in shown if sentence in " ".join(s.split())]
            assert not leaks, f"{cell['id']}: visible before the guess: {sentence!r}"
        checked += 1
    assert checked == sum(nb_predict.is_predict_cell(c) for c in cells)


def _lint_one(nb: dict) -> list[str]:
    return nb_predict.lint(nb, "nb")


def _first_predict(nb: dict) -> tuple[int, dict]:
    return next((i, c) for i, c in enumerate(nb["cells"]) if nb_predict.is_predict_cell(c))


@pytest.mark.parametrize(
    "breakage, message",
    [
        ("explain", "'explain=' shows the answer"),
        ("source", "source must be collapsed"),
        ("reveal-open", "must have its output collapsed"),
        ("unfolded", "must open with the explanation folded"),
        ("literal", "'answer' must be a lambda that calls the kit"),
        ("duplicate-id", "cell ids must be unique"),
        ("no-board", "scoreboard() cell must stand right before"),
    ],
)
def test_the_lint_catches_each_leak(breakage, message):
    """Each way an edited notebook can show its answer early (or lose its structure) is reported
    by the lint, in a sentence naming the cell; the unbroken notebook reports nothing."""
    nb = copy.deepcopy(_notebook("01"))
    assert _lint_one(nb) == []
    i, cell = _first_predict(nb)
    cells = nb["cells"]
    src = _text(cell)
    if breakage == "explain":
        cell["source"] = [src.replace("\n)", '\n    explain="17.2 GFLOP",\n)')]
    elif breakage == "source":
        cell["metadata"]["jupyter"]["source_hidden"] = False
    elif breakage == "reveal-open":
        rid = cell["metadata"]["dlperf"]["reveal"][0]
        next(c for c in cells if c["id"] == rid)["metadata"]["jupyter"]["outputs_hidden"] = False
    elif breakage == "unfolded":
        where, _ = nb_predict.explanation(cells, i)
        cells[where]["source"] = [nb_predict.visible_markdown(_text(cells[where])).lstrip()]
    elif breakage == "literal":
        cell["source"] = [src.replace("answer=lambda:", "answer=2 * 0 +", 1)]
    elif breakage == "duplicate-id":
        cells[i + 1]["id"] = cell["id"]
    else:
        cells[:] = [c for c in cells if "Predict.scoreboard()" not in _text(c)]
    problems = _lint_one(nb)
    assert any(message in p for p in problems), problems


def test_the_lint_command_exits_1_on_a_leaking_notebook(tmp_path, capsys):
    """`python tools/nb_predict.py FILE` exits 0 on a clean notebook and 1, naming the cell,
    on one whose Predict cell shows its source."""
    nb = _notebook("00")
    clean = tmp_path / "00_clean.ipynb"
    clean.write_text(json.dumps(nb))
    assert nb_predict.main([str(clean)]) == 0
    _, cell = _first_predict(nb)
    cell["metadata"]["jupyter"]["source_hidden"] = False
    bad = tmp_path / "00_bad.ipynb"
    bad.write_text(json.dumps(nb))
    assert nb_predict.main([str(bad)]) == 1
    assert cell["id"] in capsys.readouterr().out


class _Recorder:
    """Stands in for ``dw.Predict`` while a cell runs: keeps the arguments, builds nothing."""

    calls: ClassVar[list[dict]] = []

    def __init__(self, question, answer=None, **kwargs):
        _Recorder.calls.append({"question": question, "answer": answer, **kwargs})


def _run_predict_cell(source: str, monkeypatch) -> dict:
    import dlperf_widgets

    _Recorder.calls = []
    monkeypatch.setattr(dlperf_widgets, "Predict", _Recorder)
    try:
        exec(compile(source, "<predict cell>", "exec"), {})
    except NameError as exc:  # the cell uses a name an earlier cell of its notebook defines
        pytest.skip(f"needs the notebook's earlier cells ({exc})")
    (call,) = _Recorder.calls
    return call


@pytest.mark.parametrize("name, cell", PREDICT_CELLS)
def test_each_answer_comes_from_the_core(name, cell, monkeypatch):
    """Each Predict cell's answer function runs and yields a finite number or one of its
    choices, which the scorer accepts (a renamed core field or a wrong choice list fails)."""
    call = _run_predict_cell(_text(cell), monkeypatch)
    answer = call["answer"]()
    if call.get("choices") is None:
        assert isinstance(answer, numbers.Real) and not isinstance(answer, bool), answer
        assert math.isfinite(float(answer))
        assert score_prediction(answer, answer, tolerance=call.get("tolerance", 0.1)).correct
    else:
        assert str(answer) in call["choices"], (answer, call["choices"])


class _Folds(html.parser.HTMLParser):
    """Splits an HTML page's text into what is inside <details> folds and what is not."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.inside: list[str] = []
        self.outside: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.depth += tag == "details"

    def handle_endtag(self, tag):
        self.depth -= tag == "details"

    def handle_data(self, data):
        (self.inside if self.depth else self.outside).append(data)


def test_static_render_shows_the_question_and_folds_the_answer(monkeypatch):
    """A course notebook rendered to HTML by nbconvert, with each Predict cell's saved output
    as the widget writes it, shows every question outside any fold while the kit's answer and
    the explanation of each Predict cell appear only inside a <details> fold."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    from dlperf_widgets.widgets.predict import Predict

    nb = _notebook("00")
    questions, answers, explanations = [], [], []
    for i, cell in enumerate(nb["cells"]):
        if not nb_predict.is_predict_cell(cell):
            continue
        call = _run_predict_cell(_text(cell), monkeypatch)
        widget = Predict(**call)
        bundle = widget._repr_mimebundle_()
        widget.close()
        cell["outputs"] = [
            {"output_type": "display_data", "data": bundle, "metadata": {}},
        ]
        questions.append(call["question"])
        answers.append(f"{call['answer']():.4g}")
        fold = nb_predict.explanation(nb["cells"], i)[1].split("</summary>", 1)[-1]
        plain = [s.replace("*", "") for s in _sentences(fold)]  # as rendered: no emphasis marks
        explanations.extend(s for s in plain if not any(ch in s for ch in "`$[]<>_\\"))
    assert questions and explanations
    body, _ = nbconvert.HTMLExporter().from_notebook_node(
        nbformat.reads(json.dumps(nb), as_version=4)
    )
    page = _Folds()
    page.feed(body)
    inside = " ".join("".join(page.inside).split())
    outside = " ".join("".join(page.outside).split())
    for q in questions:
        assert html.unescape(q) in outside, q
    for a in answers:
        assert f"The kit's answer: {a}" in inside and f"The kit's answer: {a}" not in outside
    for sentence in explanations:
        assert sentence in inside and sentence not in outside, sentence
