"""The course notebooks in JupyterLab in real Chromium, part 1 of two: the notebooks at
places 1, 3, 5, ... of the sorted ``notebooks/`` (the other part is
``test_course_notebooks_0.py``, so that two workers run the halves at once).

Each notebook runs with JupyterLab's own "Run All Cells" in one JupyterLab page that stays
loaded for the whole file, and must end with no error output, every widget view rendered (no
"Loading widget..." or "Error displaying widget" placeholder) and every figure loaded.
Screenshots go to ``test-output/screenshots/``. Skipped, with one reason, only when playwright
or Chromium is missing (``python tools/ensure_browser.py`` installs them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lab_checks
import labdriver
import pytest

UNAVAILABLE = labdriver.browser_unavailable_reason()
if UNAVAILABLE:
    pytest.skip(UNAVAILABLE, allow_module_level=True)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", lab_checks.notebook_params(1))
def test_notebook_runs_in_jupyterlab(
    name: str, lab_page: Any, lab_server: labdriver.LabServer, screenshots: Path
) -> None:
    """Guards the learner's first experience: the notebook runs top to bottom in JupyterLab
    with no error output, and every widget it displays is rendered in the page."""
    lab_checks.check_course_notebook(lab_page, lab_server, name, screenshots)
