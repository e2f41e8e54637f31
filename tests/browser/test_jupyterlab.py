"""JupyterLab in a real browser: the course's widgets, as a learner meets them.

Python-side notebook runs (nbval) cannot show that a widget renders. These tests start
JupyterLab, drive headless Chromium with playwright, and read the page:

- one notebook opens and runs in Notebook 7 with no error output and its widgets rendered
  (every course notebook runs in JupyterLab in ``test_course_notebooks_0.py`` and ``_1.py``);
- a move of GemmExplorer's 'K' slider comes back as the core's arithmetic intensity for the
  new shape, and bad input in its 'tile' box shows the inline message; the same round trip
  built from plain ipywidgets checks the harness itself.

Screenshots go to ``test-output/screenshots/``. The module is skipped, with one reason, only
when playwright or Chromium is missing (``python tools/ensure_browser.py`` installs them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lab_checks
import labdriver
import pytest

import dlperf_widgets

lab_checks.skip_module_if_unavailable()

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = lab_checks.NOTEBOOKS
SHAPE = labdriver.START_SHAPE

pytestmark = pytest.mark.slow


def test_notebook7_renders(
    page: Any, lab_server: labdriver.LabServer, lab_root: Path, screenshots: Path
) -> None:
    """Guards the classic-notebook users: one notebook opens in Notebook 7 (/notebooks/...),
    shows all its cells, runs cleanly and renders its widgets."""
    first = ROOT / "notebooks" / "00_start_here.ipynb"
    if first.exists():
        path = "notebooks/00_start_here.ipynb"
    elif NOTEBOOKS:
        path = f"notebooks/{NOTEBOOKS[0].name}"
    else:  # no course notebook yet: a plain widget notebook stands in
        labdriver.write_notebook(lab_root / "checks" / "nb7.ipynb", labdriver.plain_widget_cells())
        path = "checks/nb7.ipynb"
    cells = json.loads((lab_root / path).read_text())["cells"]
    report = lab_checks.run_and_check(page, lab_server, path, ui="notebook")
    page.screenshot(path=str(screenshots / f"notebook7_{Path(path).stem}.png"))
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    assert report["renderedCells"] == len(cells)
    lab_checks.assert_clean(report, path)


def expected_ai(k: int, n: int = SHAPE["n"]) -> str:
    """The arithmetic intensity the core gives for the moved shape, as the widgets print it.

    Cross-checked with the formula of NVIDIA's "Matrix Multiplication Background User's
    Guide": FLOPs / bytes = 2·M·N·K / (2 bytes · (M·K + N·K + M·N)) for FP16, C not read.
    """
    m = SHAPE["m"]
    result = dlperf_widgets.gemm(m, n, k, dtype=SHAPE["dtype"], gpu=SHAPE["gpu"])
    assert SHAPE["dtype"] == "fp16"
    by_hand = 2 * m * n * k / (2 * (m * k + n * k + m * n))
    assert result.arithmetic_intensity == pytest.approx(by_hand, rel=1e-12)
    return f"{result.arithmetic_intensity:.1f}"


def open_widget_notebook(
    page: Any, server: labdriver.LabServer, root: Path, name: str, cells: list[str]
) -> str:
    path = f"checks/{name}.ipynb"
    labdriver.write_notebook(root / path, cells)
    labdriver.open_notebook(page, server, path)
    labdriver.run_all_cells(page, path, timeout_s=90)
    report = labdriver.wait_for_widgets(page, path)
    assert not report["errors"], report["errors"]
    assert report["widgetViews"] >= 1 and not report["placeholders"], report
    return path


def move_k(page: Any) -> tuple[int, str]:
    """Move the 'K' slider one step with the keyboard (down if it is at its maximum); return
    the new K and the arithmetic intensity the page then shows."""
    slider = labdriver.control(page, "K")
    assert slider.count() >= 1, "no slider described 'K' on the page"
    slider = slider.first
    before = labdriver.slider_value(slider)
    shown = page.locator(".dlperf-ai").first
    old_text = shown.text_content()
    k = labdriver.press_slider(slider, "ArrowRight")
    if k == before:
        k = labdriver.press_slider(slider, "ArrowLeft")
    assert k != before, "the 'K' slider did not move"
    want = expected_ai(k)
    if want != old_text:
        page.wait_for_function(
            "(want) => document.querySelector('.dlperf-ai').textContent.trim() === want",
            arg=want,
            timeout=15_000,
        )
    return k, (shown.text_content() or "").strip()


def test_plain_ipywidgets_slider_round_trip(
    page: Any, lab_server: labdriver.LabServer, lab_root: Path, screenshots: Path
) -> None:
    """Guards the harness: ipywidgets render in this JupyterLab and a keyboard move of a
    slider reaches the kernel and comes back as the core's arithmetic intensity."""
    open_widget_notebook(
        page, lab_server, lab_root, "plain_widgets", labdriver.plain_widget_cells()
    )
    assert page.locator(".dlperf-ai").first.text_content() == expected_ai(SHAPE["k"])
    k, shown = move_k(page)
    page.screenshot(path=str(screenshots / "plain_widgets.png"))
    assert shown == expected_ai(k)


@pytest.fixture()
def explorer_path(page: Any, lab_server: labdriver.LabServer, lab_root: Path) -> str:
    why = labdriver.gemm_explorer_available()
    if why:
        pytest.skip(why)
    return open_widget_notebook(
        page, lab_server, lab_root, "gemm_explorer", labdriver.gemm_explorer_cells()
    )


def test_gemm_explorer_slider_shows_core_intensity(
    page: Any, explorer_path: str, screenshots: Path
) -> None:
    """Guards GemmExplorer end to end: the first view shows the core's arithmetic intensity
    for the starting shape; after a move of the 'K' slider it shows the core's value for the
    new shape, and the widget's ``.result`` agrees with the page."""
    shown = page.locator(".dlperf-ai").first
    first = (shown.text_content() or "").strip()
    assert first == expected_ai(SHAPE["k"])
    k, text = move_k(page)
    assert text == expected_ai(k)
    assert text != first, "one step of K should change the intensity shown"
    state = labdriver.execute_in_kernel(
        page,
        explorer_path,
        "print(explorer.result.k, f'{explorer.result.arithmetic_intensity:.1f}')",
    )
    assert state.split() == [str(k), text]
    page.set_viewport_size({"width": 1280, "height": 1600})
    page.locator(".jp-OutputArea-output").first.screenshot(
        path=str(screenshots / "gemm_explorer.png")
    )


def test_gemm_explorer_bad_tile_shows_inline_message(
    page: Any, explorer_path: str, screenshots: Path
) -> None:
    """Guards the inline error: typing an impossible tile shape into the 'tile' box shows a
    `.dlperf-error` message that names the parameter, and no traceback."""
    box = labdriver.control(page, "tile", kind="text")
    assert box.count() >= 1, "no text field described 'tile' on the page"
    field = box.first.locator("input").first
    field.fill("banana")
    field.press("Enter")
    error = page.locator(".dlperf-error").first
    error.wait_for(state="visible", timeout=15_000)
    page.set_viewport_size({"width": 1280, "height": 1600})
    page.locator(".jp-OutputArea-output").first.screenshot(
        path=str(screenshots / "gemm_explorer_bad_tile.png")
    )
    assert "tile" in (error.text_content() or "").lower()
    report = labdriver.notebook_report(page, explorer_path)
    assert not report["errors"] and not report["domErrors"], report


def test_predict_reveals_the_answer_only_after_a_guess(
    page: Any, lab_server: labdriver.LabServer, lab_root: Path, screenshots: Path
) -> None:
    """Guards the prediction cell: before a guess the page shows the question and an input box
    and no answer text;
    typing a guess and pressing Enter brings back the core's answer with how far off the
    guess was."""
    cells = [
        "# Predict in the browser",
        "import dlperf_widgets as dw\n\n"
        "q = dw.Predict('Arithmetic intensity of 8192 x 128 x 8192 in FP16?',\n"
        "               lambda: dw.gemm(8192, 128, 8192, dtype='fp16', gpu='V100')"
        ".arithmetic_intensity,\n"
        "               unit='FLOP/B')\nq",
    ]
    open_widget_notebook(page, lab_server, lab_root, "predict", cells)
    answer = page.locator(".dlperf-predict-answer").first
    before = page.locator(".dlperf-predict").first.text_content() or ""
    assert "Arithmetic intensity of 8192 x 128 x 8192 in FP16?" in before
    assert "124.1" not in before and "answer" not in before.lower()
    assert not (answer.text_content() or "").strip(), "answer text shown before a guess"
    field = page.locator(".dlperf-predict .widget-text input").first
    assert field.is_visible(), "no input box for the guess"
    field.fill("100")
    field.press("Enter")
    page.wait_for_function(
        "() => (document.querySelector('.dlperf-predict-answer') || {}).textContent"
        " && document.querySelector('.dlperf-predict-answer').textContent.includes('124.1')",
        timeout=15_000,
    )
    text = answer.text_content() or ""
    page.locator(".jp-OutputArea-output").first.screenshot(path=str(screenshots / "predict.png"))
    assert "124.1 FLOP/B" in text and "too low" in text


def test_reveal_outputs_open_collapsed(
    page: Any, lab_server: labdriver.LabServer, screenshots: Path
) -> None:
    """Guards predict-then-reveal in JupyterLab: the cells that print a Predict question's
    answer (metadata jupyter.outputs_hidden) open with their output folded into a
    placeholder bar, one bar per such cell, so the saved answer is not on the screen."""
    name = "01_gemm_and_intensity.ipynb"
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    hidden = [
        c
        for c in cells
        if c.get("metadata", {}).get("jupyter", {}).get("outputs_hidden") and c.get("outputs")
    ]
    assert hidden, f"{name} has no collapsed reveal cell"
    labdriver.open_notebook(page, lab_server, f"notebooks/{name}")
    page.wait_for_function(
        "(n) => document.querySelectorAll('.jp-OutputPlaceholder').length >= n",
        arg=len(hidden),
        timeout=30_000,
    )
    page.screenshot(path=str(screenshots / "collapsed_reveal_cells.png"))
    assert page.locator(".jp-OutputPlaceholder").count() == len(hidden)


def test_predict_cells_open_with_source_and_explanation_folded(
    page: Any, lab_server: labdriver.LabServer, screenshots: Path
) -> None:
    """Guards the hidden answers in a course notebook: every Predict cell opens with its
    source collapsed (metadata jupyter.source_hidden, one input placeholder each) and every
    explanation fold (a markdown <details>) opens closed, so no answer text is on the screen."""
    name = "00_start_here.ipynb"
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    hidden = [c for c in cells if c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    folded = [c for c in cells if "".join(c["source"]).lstrip().startswith("<details")]
    assert hidden and folded, f"{name} has no collapsed Predict cell or folded explanation"
    labdriver.open_notebook(page, lab_server, f"notebooks/{name}")
    page.wait_for_function(
        "(n) => document.querySelectorAll('.jp-InputPlaceholder').length >= n",
        arg=len(hidden),
        timeout=30_000,
    )
    page.screenshot(path=str(screenshots / "collapsed_predict_cells.png"))
    closed = page.locator(".jp-MarkdownOutput details:not([open])")
    assert closed.count() >= len(folded)
    assert page.locator(".jp-MarkdownOutput details[open]").count() == 0
