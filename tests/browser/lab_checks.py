"""What the browser test files share: which course notebooks each one runs, and how a
notebook's run in the page is judged.

The course notebooks are split over two test files by their place in the sorted list (even and
odd places, about equal in run time), so that ``pytest -n 2 --dist loadfile`` runs the two
halves on two workers at once; each file keeps one JupyterLab page loaded and opens its
notebooks inside it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import labdriver
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PARTS = 2
# Seconds one notebook may take to run all its cells in the browser.
NOTEBOOK_TIMEOUT_S = float(os.environ.get("DLPERF_BROWSER_NOTEBOOK_TIMEOUT", "120"))


def skip_module_if_unavailable() -> None:
    """Skip the calling test module, with one reason, when playwright or Chromium is missing
    (``python tools/ensure_browser.py`` installs them); call it at the module's top."""
    why = labdriver.browser_unavailable_reason()
    if why:
        pytest.skip(why, allow_module_level=True)


def notebook_params(part: int) -> list[Any]:
    """The notebooks at places ``part``, ``part + PARTS``, ... of the sorted list."""
    if not NOTEBOOKS:
        return [
            pytest.param(None, id="none", marks=pytest.mark.skip("notebooks/ has no notebook yet"))
        ]
    return [pytest.param(path.name, id=path.stem) for path in NOTEBOOKS[part::PARTS]]


def notebook_test(part: int) -> Any:
    """The test function of one part, for a test module to bind to a ``test_`` name."""

    @pytest.mark.parametrize("name", notebook_params(part))
    def test_notebook_runs_in_jupyterlab(
        name: str, lab_page: Any, lab_server: labdriver.LabServer, screenshots: Path
    ) -> None:
        """Guards the learner's first experience: the notebook runs top to bottom in
        JupyterLab with no error output, and every widget it displays is rendered."""
        check_course_notebook(lab_page, lab_server, name, screenshots)

    return test_notebook_runs_in_jupyterlab


def run_and_check(page: Any, server: labdriver.LabServer, path: str, ui: str) -> dict[str, Any]:
    """Open ``path`` in a freshly loaded page, run all cells, wait for the widgets; return
    the page's report."""
    labdriver.open_notebook(page, server, path, ui=ui)
    labdriver.run_all_cells(page, path, timeout_s=NOTEBOOK_TIMEOUT_S)
    return labdriver.wait_for_widgets(page, path)


def check_course_notebook(
    lab_page: Any, server: labdriver.LabServer, name: str, screenshots: Path
) -> None:
    """Open ``notebooks/<name>`` in the loaded JupyterLab page, run all its cells with
    JupyterLab's own command, take a screenshot, close it, and assert a clean report."""
    path = f"notebooks/{name}"
    try:
        labdriver.open_in_lab(lab_page, server, path)
        labdriver.run_all_cells(lab_page, path, timeout_s=NOTEBOOK_TIMEOUT_S)
        report = labdriver.wait_for_widgets(lab_page, path)
        lab_page.screenshot(path=str(screenshots / f"lab_{Path(name).stem}.png"))
    except BaseException:
        with contextlib.suppress(Exception):  # the first failure is the one to report
            labdriver.close_notebooks(lab_page, server)
        raise
    labdriver.close_notebooks(lab_page, server)
    assert_clean(report, path)


def assert_clean(report: dict[str, Any], path: str) -> None:
    """The notebook ran to the end with no error and every widget view on the page."""
    where = f"{path} in the browser"
    assert report["kernel"] == "idle", f"{where}: kernel is {report['kernel']}, not idle"
    assert not report["errors"], f"{where}: error outputs {json.dumps(report['errors'])}"
    assert not report["domErrors"], f"{where}: tracebacks on the page {report['domErrors']}"
    assert not report["unexecuted"], f"{where}: cells not run {report['unexecuted']}"
    assert not report["placeholders"], f"{where}: widget placeholders {report['placeholders']}"
    assert report["widgetViews"] == report["widgetOutputs"], (
        f"{where}: {report['widgetOutputs']} widget outputs but "
        f"{report['widgetViews']} rendered widget views"
    )
    assert report["brokenImages"] == 0, f"{where}: {report['brokenImages']} images did not load"
